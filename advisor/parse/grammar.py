"""The Lark grammars: split a line into its envelope and body, and find the messages in the body."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from lark import Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

from advisor.parse.anchors import AnchorSearch, anchor_words, find_anchor
from advisor.parse.envelope import CRITICAL, ERROR, Envelope, Parse, _lark_parse, split_envelope
from advisor.parse.facts import Fact, Number
from advisor.parse.messages import ToFacts, refused
from advisor.parse.parsers import literal_terminals, message_parser
from advisor.parse.places import logged_stage, names_a_request, placed_words, staged_functions

# Facts about the shape of a traceback count only where they start the line's body;
# elsewhere "ValueError" or 'File "' is just a word inside a sentence.
STRUCTURAL_ANCHORS = {"A_TRACEBACK", "A_FILE", "A_IPYTHON_FILE", "A_COLAB_FILE", "A_EXCEPTION", "A_WEIGHT_KERNEL"}
# Real lines state a few messages; a hostile one full of anchors must not cost a parse per anchor.
MAX_ANCHORS_PER_LINE = 32
# The kind of the mark a message leaves when the end of its line cuts it short (see advisor.parse.continuation).
CUT = "cut"
# The facts a line's envelope gives when the grammar reads none of its words (parse_line).
RECORD_KINDS = frozenset({"error_record", "critical_record"})


def may_state_facts(text: str) -> bool:
    """Whether a line can state a fact: it holds an anchor, or it may be an error-level record."""
    return CRITICAL in text or ERROR in text or find_anchor(text) is not None


def parse_line(text: str, line: int, parse: Parse = _lark_parse) -> list[Fact]:
    """Every fact a line states, in order. Lines without an anchor cost one regex search.

    `parse(parser, text) -> Tree` runs a Lark parser; advisor.fast.templates passes a caching one.
    """
    if not may_state_facts(text):
        return []
    envelope = split_envelope(text, parse)
    logged_in = logged_stage(envelope)
    placed = placed_words(envelope)
    request = names_a_request(envelope)
    facts: list[Fact] = []
    for kind, values, words, args in messages(joined_fragments(envelope.body), parse):
        if logged_in:
            words = {**words, "logged_in": logged_in}
        if request:
            words = {**words, "request": "named"}
        if placed:
            words = {**words, **placed}
        facts.append(
            Fact(
                kind=kind,
                line=line,
                values=values,
                text=words,
                args=args,
                process=envelope.process,
                level=envelope.level,
            )
        )
    nothing_read = all(fact.kind == CUT for fact in facts)
    if nothing_read and envelope.level == CRITICAL:
        # vLLM logs CRITICAL only when it gives up: whatever its words, a record of its own.
        words = {"message": envelope.body[:500]}
        facts.append(Fact(kind="critical_record", line=line, text=words, process=envelope.process, level=CRITICAL))
    elif nothing_read and own_error_record(envelope, text):
        # An error vLLM logged in words the grammar does not know ("WorkerProc hit an exception."), or
        # cut inside words it knows ("EngineCore hit an exc"): it fails nothing by itself, but a log
        # that ends in one did not end well.
        words = {"message": envelope.body[:500]}
        if logged_in:
            words["logged_in"] = logged_in
        words.update(placed)
        facts.append(Fact(kind="error_record", line=line, text=words, process=envelope.process, level=ERROR))
    return facts


def own_error_record(envelope: Envelope, text: str) -> bool:
    """Whether a line is an ERROR record of vLLM's logger ([file.py:N]) in its own words: not one of
    the indented lines of a traceback that the same logger call printed, nor an empty one."""
    if envelope.level != ERROR or envelope.source is None or not envelope.body[:1].isalnum():
        return False
    start = len(text.rstrip()) - len(envelope.body)
    return text[start - 2 : start] != "  "


# An exception raised with several strings, RuntimeError("a ", f"b {x}. ", "c."), prints them as a
# tuple: ('a ', 'b 80. ', 'c.'). Bounded repeats keep the search linear on hostile lines.
FRAGMENTS = re.compile(r"\('[^'\\]{0,500}'(?:, '[^'\\]{0,500}'){1,16}\)")
FRAGMENT = re.compile(r"'([^'\\]*)'")


def joined_fragments(body: str) -> str:
    """The body with each tuple of string fragments read as the one sentence it stands for."""
    if "', '" not in body:
        return body
    return FRAGMENTS.sub(lambda found: "".join(FRAGMENT.findall(found[0])), body)


def messages(
    body: str, parse: Parse = _lark_parse
) -> Iterator[tuple[str, dict[str, Number], dict[str, str], dict[str, Any]]]:
    """Yield (kind, values, text, args) for each message found in a line's body."""
    position, attempts, anchors = 0, 0, AnchorSearch(body)
    while (match := anchors.find(position)) is not None and attempts < MAX_ANCHORS_PER_LINE:
        start, attempts = match.start, attempts + 1
        if match.name in STRUCTURAL_ANCHORS and body[:start].strip():
            position = start + 1
            continue
        try:
            tree = parse(message_parser(), body[start:])
        except LarkError as error:
            if not _cut_by_the_end(error, body[start:]):
                position = start + 1
                continue
            clauses = _complete_clauses(body[start:], parse)
            yield CUT, {}, {}, {}
            if clauses is None:
                position = start + 1
                continue
            tree = clauses
        message, rest = tree.children[0], _rest(tree)
        kind = message.data if isinstance(message, Tree) else "unknown"
        parts = ToFacts().transform(message) or {}
        words = dict(parts.get("text", {}))
        if kind == "exception":
            words["message"] = (rest.lstrip(":( ") if rest else "")[:500]
        elif kind == "config_value_error":  # pydantic's detail: the message, without its [type=...] note
            words["message"] = (rest or "").split(" [type=")[0].strip()[:500]
        if "message" in words and (settings := refused(words["message"])):
            words["refuses"] = settings
        yield str(kind), parts.get("values", {}), words, parts.get("args", {})
        if words.get("cut"):  # arguments a line's end cut: the next rows may hold the rest
            yield CUT, {}, {}, {}
        if kind == "stats" and not body.rstrip().endswith(STATS_END):
            yield CUT, {}, {}, {}  # every stats line ends on a percentage: a terminal wrapped this one
        if rest is None:
            if _goes_on(kind, words, body):
                yield CUT, {}, {}, {}
            return
        position = len(body) - len(rest)  # REST is the suffix of the body after this message
    if ends_inside_words(body):
        yield CUT, {}, {}, {}


def _goes_on(kind: str, words: Mapping[str, str], body: str) -> bool:
    """Whether a message that runs to its line's end may go on in the next line: a wrap may have cut its
    last number ("... length is 1" of "15488") or its frame's function ("output_hand" of "output_handler");
    a typed command goes on where a trailing backslash says so (its flags end in whole numbers)."""
    if kind == "launch_command":
        return body.rstrip().endswith("\\")
    return body[-1:].isdigit() or (kind == "frame" and words.get("function") not in staged_functions())


# A line that ends inside a message's words ends on at least this much of them, a whole word
# at least ("max" of "max seq len ("): shorter tails end too many lines that continue nothing.
MIN_WORDS_TAIL = 3


@cache
def word_starts() -> tuple[frozenset[str], int]:
    """Every proper beginning, MIN_WORDS_TAIL characters or more, of the grammar's words (the anchors'
    and the other string terminals'), and the longest of them."""
    words = set(anchor_words()) | set(literal_terminals().values())
    # A whole word ("Error" of "500 Internal Server Error") is no word cut short.
    starts = frozenset(word[:end] for word in words for end in range(MIN_WORDS_TAIL, len(word))) - words
    return starts, max(map(len, starts), default=0)


def ends_inside_words(body: str) -> bool:
    """Whether the text ends on the first part of the grammar's words: "... with the model's max seq"
    cut by a terminal's wrap before " len (32768)", or ". Based on the av" before "ailable memory"."""
    starts, longest = word_starts()
    # A word begins where the text before it is no letter or digit, or it begins with a space itself
    # (" out of memory." follows "CUDA").
    return any(
        body[-size:] in starts and (size == len(body) or not body[-size - 1].isalnum() or not body[-size].isalnum())
        for size in range(MIN_WORDS_TAIL, min(len(body), longest) + 1)
    )


# How every periodic stats line of every release ends: "... CPU KV cache usage: 0.0%." (V0),
# "... Prefix cache hit rate: 0.0%" (V1).
STATS_END = ("%", "%.")
# Where a message's optional clauses begin: a line cut inside one still states the clauses before it.
CLAUSE_END = re.compile(r"[.,;]\s|\s\(")
# The longest last word of a line that a wrap may have cut out of the grammar's words ("Pending" of
# "Pending: 3 reqs").
MAX_CUT_WORD = 40
# The tail a wrap leaves of a clause: a few words ("Pend" of "Pending: 3", "Avg genera" of "Avg
# generation throughput: 538.3", "109.81 Mi" of "109.81 MiB is free", "Prefix cache hit ra" of the four words
# of V1's longest stats label).
CUT_WORDS = re.compile(r"\S+(?: \S+){0,3}")
# How many clauses back from the cut a message is tried again.
MAX_CLAUSES_BACK = 3


def _complete_clauses(text: str, parse: Parse) -> Tree[Any] | None:
    """The message a cut line states in its complete clauses: "CUDA out of memory. Tried to allocate
    426.00 MiB. GPU " read as far as "MiB", the longest such text that parses, or None."""
    ends = [m.start() for m in CLAUSE_END.finditer(text)][-MAX_CLAUSES_BACK:]
    for end in reversed(ends):
        try:
            return parse(message_parser(), text[:end])
        except LarkError:
            continue
    return None


def _cut_by_the_end(error: LarkError, text: str) -> bool:
    """Whether a message failed only because its text ended: at the end, or inside a word it expected."""
    if isinstance(error, UnexpectedEOF):
        return True
    if isinstance(error, UnexpectedToken):
        if error.token.type == "$END":
            return True
        at, expected = error.token.start_pos, error.expected
    elif isinstance(error, UnexpectedCharacters):
        at, expected = error.pos_in_stream, error.allowed
    else:
        return False
    rest = text[at:].rstrip()
    if rest and len(rest) <= MAX_CUT_WORD and CUT_WORDS.fullmatch(rest):
        return True  # the line ends on words the grammar did not expect: the start of longer ones
    words = literal_terminals()
    return bool(rest) and any(
        len(words.get(name, "")) > len(rest) and words[name].startswith(rest) for name in expected
    )


def _rest(tree: Tree[Any]) -> str | None:
    last = tree.children[-1]
    return str(last) if isinstance(last, Token) and last.type == "REST" else None
