"""Messages cut by the end of their line, read on into the lines that continue them.

A terminal hard-wraps a long line at its width, mid-word; an exception's text can hold newlines of
its own. parse_line leaves a CUT mark where a line may end inside a message: the grammar ran out of
text before the message was complete, the line ends on the first part of the grammar's words (an
anchor's "max seq" before " len ("), or a message ends on a number a wrap may have cut. The next
lines continue it when they start no record of their own (no envelope, no traceback line) and the
joined text says more than the line alone; it goes through the grammar again, so the grammar stays
the one source of facts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final, Literal, overload

from advisor.ingest.sources import Line
from advisor.parse.anchors import find_anchor
from advisor.parse.envelope import split_envelope
from advisor.parse.facts import Fact, Number
from advisor.parse.grammar import CUT, RECORD_KINDS
from advisor.parse.places import staged_functions

# A message is read on into at most this many lines: nine terminal rows of 80 columns hold the
# longest error the grammar reads in parts (the KV shortfall with its estimate and its advice,
# behind a process prefix).
MAX_FOLLOWING = 8
# Lines longer than this are no terminal's rows: they are not read on into, nor continue another
# (and a hostile log of 64 KB lines full of anchors does not cost a parse of joined megabytes).
MAX_ROW = 2048
# join()'s answer when the lines given do not settle it and more may come.
MORE: Final = "more"
# What begins a line of its own in a traceback, besides an envelope.
TRACEBACK_STARTS = ("Traceback (most recent call last)", 'File "', "During handling of", "The above exception")

# A tqdm bar ("100%|████") is a line of its own: its digits continue no number cut by a wrap.
PROGRESS_BAR = re.compile(r"\d{1,3}%\|")
# Nor is a line that opens on a date and time, a record of a format the envelope does not know
# ("2024-12-20 15:18:19 - vllm.executor.distributed_gpu_executor - INFO - ...").
DATED = re.compile(r"\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d")

ParseLine = Callable[[str, int], list[Fact]]
# A fact as a join compares it: its kind and what it says (a frame: whether its function is staged).
Said = tuple[str, dict[str, Number | bool]]
# A cut line's facts read on into the lines after it, and how many of those it took.
Joined = tuple[list[Fact], int]


def is_cut(facts: Sequence[Fact]) -> bool:
    return any(fact.kind == CUT for fact in facts)


def without_cut(facts: Sequence[Fact]) -> list[Fact]:
    return [fact for fact in facts if fact.kind != CUT]


def reading(facts: Sequence[Fact]) -> list[Said]:
    return [(fact.kind, _said(fact)) for fact in facts if fact.kind != CUT]


def _said(fact: Fact) -> dict[str, Number | bool]:
    """A fact's values; for a frame, whether the stage map places its function (a wrap cut it if not)."""
    if fact.kind == "frame":
        return {"staged": fact.text.get("function") in staged_functions()}
    return dict(fact.values)


def reads_more(joined: list[Said], alone: list[Said]) -> bool:
    """Whether the joined text says more than the line alone: a message more, a value more, or a
    value the line's end had cut ("1" of "15488"); and nothing less."""
    if not Counter(kind for kind, _ in joined) >= Counter(kind for kind, _ in alone):
        return False
    return len(joined) > len(alone) or any(
        values != dict(alone_values) for (_, values), (_, alone_values) in zip(joined, alone, strict=False)
    )


def starts_record(text: str) -> bool:
    """Whether a line begins something of its own rather than continuing the line before it."""
    body = text.strip()
    if not body or body.startswith(TRACEBACK_STARTS) or PROGRESS_BAR.match(body) or DATED.match(body):
        return True
    envelope = split_envelope(text)
    if envelope.level or envelope.process:
        return True
    found = find_anchor(envelope.body)
    return found is not None and found.start == 0 and found.name == "A_EXCEPTION"


@overload
def join(
    text: str,
    facts_alone: Sequence[Fact],
    number: int,
    following: Sequence[str],
    parse: ParseLine,
    final: Literal[True],
) -> Joined | None: ...
@overload
def join(
    text: str, facts_alone: Sequence[Fact], number: int, following: Sequence[str], parse: ParseLine, final: bool
) -> Joined | Literal["more"] | None: ...
def join(
    text: str, facts_alone: Sequence[Fact], number: int, following: Sequence[str], parse: ParseLine, final: bool
) -> Joined | Literal["more"] | None:
    """The facts of `text` (whose own are `facts_alone`) read on into the next lines' texts, and how
    many of them it took: (facts, used); None when they do not continue its cut message; MORE when
    they end with the message still cut and further lines may come (`final` is false and fewer than
    MAX_FOLLOWING given)."""
    if len(text) > MAX_ROW:
        return None
    if following and is_frame_code(facts_alone, following[0]):
        return None
    # A record in words the grammar does not know stands only while nothing reads on.
    alone = [said for said in reading(facts_alone) if said[0] not in RECORD_KINDS]
    joined, continuation = text, ""
    # The lines read on into so far when they complete a message though the text stays cut after it
    # (a warning whose advice the excerpt's end cuts): what the next lines do not continue keeps it.
    best = None
    for used, line in enumerate(following[:MAX_FOLLOWING], 1):
        if len(line) > MAX_ROW or starts_record(line):
            return best
        still_cut = None
        # A terminal wraps mid-word and keeps every space; a newline in an exception's text stood
        # for a space (and a paste may indent the line it begins): the space is tried only where
        # nothing reads on without it.
        for separator, rest in (("", line), (" ", line.lstrip())):
            facts = parse(joined + separator + rest, number)
            # What the next lines say by themselves is theirs: the join must add to the cut message.
            added = without(reading(facts), reading(parse(continuation + separator + rest, number)))
            if reads_more(added, alone):
                if not is_cut(facts):
                    return facts, used
                best = facts, used
            if is_cut(facts):
                still_cut = (joined + separator + rest, continuation + separator + rest)
                break
        if still_cut is None:
            return best
        joined, continuation = still_cut
    return MORE if not final and len(following) < MAX_FOLLOWING else best


def is_frame_code(facts: Sequence[Fact], line: str) -> bool:
    """Whether `line` is the source code under a traceback frame that `facts` end on, not the rest of
    its function's name: a terminal's wrap goes on at the row's first column, the code is indented."""
    said = without_cut(facts)
    return bool(said) and said[-1].kind == "frame" and line[:1].isspace()


def without(facts: list[Said], others: list[Said]) -> list[Said]:
    """`facts` less one of each of `others` it holds."""
    left = list(facts)
    for other in others:
        if other in left:
            left.remove(other)
    return left


def continued_facts(lines: Iterable[Line], parse: ParseLine) -> Iterator[Fact]:
    """Every fact of every line, in order, a cut message read on into the lines that continue it.

    Lines are taken as the physical lines they are: the segments of one (split by lone CRs) share its
    number. Only a physical line of one segment continues another; the cut one may have several.
    """
    physical = _physical_lines(lines)
    ahead: list[tuple[int, list[str]]] = []
    while True:
        if ahead:
            number, texts = ahead.pop(0)
        else:
            group = next(physical, None)
            if group is None:
                return
            number, texts = group
        facts = [fact for text in texts[:-1] for fact in without_cut(parse(text, number))]
        last = parse(texts[-1], number)
        if not is_cut(last):
            yield from facts + last
            continue
        while len(ahead) < MAX_FOLLOWING and (nxt := next(physical, None)) is not None:
            ahead.append(nxt)
        following = [group[1][0] for group in _single_segment_prefix(ahead)]
        joined = join(texts[-1], last, number, following, parse, final=True)
        if joined is None:
            yield from facts + without_cut(last)
            continue
        joined_facts, used = joined
        yield from facts + without_cut(joined_facts)
        del ahead[:used]


def _physical_lines(lines: Iterable[Line]) -> Iterator[tuple[int, list[str]]]:
    number, texts = 0, list[str]()
    for line in lines:
        if line.number != number and texts:
            yield number, texts
            texts = []
        number = line.number
        texts.append(line.text)
    if texts:
        yield number, texts


def _single_segment_prefix(groups: list[tuple[int, list[str]]]) -> list[tuple[int, list[str]]]:
    prefix = []
    for group in groups:
        if len(group[1]) != 1:
            break
        prefix.append(group)
    return prefix
