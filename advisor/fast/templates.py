"""Parse cache for lines that differ only in digits: parse once per template, re-read the digits each time."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import cast

from advisor.fast.tree_cache import BYPASS, MAX_CACHED_LINE, MAX_TEMPLATES, TemplateCache
from advisor.ingest.sources import stripped_prefix
from advisor.parse.envelope import Parse
from advisor.parse.facts import Fact, Number, number
from advisor.parse.grammar import may_state_facts, parse_line

# The same key as UTF-8 bytes, ten times quicker to make: only ASCII digits are ASCII digit bytes.
DIGIT_BYTES_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
# A number as the probes change it: digits, maybe one decimal part. A value read from a longer
# token ("1,048,576", "2.5GiB") changes with several spans or not like number(): no recipe then.
NUMBER_SPAN = re.compile(r"\d+(?:\.\d+)?")
# What reads a value from its span of a line, the text or its raw ASCII bytes (int, float, or a constant).
Reader = Callable[[str | bytes], Number]
PROCESS = "@process"  # a recipe place for the process tag, not a value name
SHIFT_DIGITS = str.maketrans("0123456789", "1234567890")


class FactTemplates:
    """parse_line for repeated line shapes: learn once which number in the line is which fact value.

    A template is learned when its shape comes again (a small log's lines are nearly all shapes
    seen once, which learning would parse twice or more for nothing). To learn it, the line is
    parsed, then parsed again with every digit changed, and when
    that leaves any doubt, once per number with only that number's digits changed (cheap: the
    tree cache serves those parses). A value that follows exactly one number as `number()` reads
    it is re-read from that place in later lines, into a fact like the first (Fact.like); when anything else moves
    (words, kinds, a value tied to two numbers), the template keeps parsing every line. Lines of
    one template share the tree shape (see TemplateCache), so the facts differ only in these
    values and the line number.
    """

    def __init__(self, prefix: re.Pattern[str] | None = None) -> None:
        self.prefix = prefix  # the log's learned per-line prefix, which cleaning strips
        self.trees = TemplateCache()
        self.recipes: dict[bytes, _Recipe | None] = {}
        self.raw_recipes: dict[bytes, _Recipe | None] = {}
        self.seen_once: set[bytes] = set()  # keys of shapes met once, not learned yet
        self.raw_seen_once: set[bytes] = set()

    def parse_raw(self, raw: bytes, line: int) -> list[Fact] | None:
        """The facts of the one line sources.line_segments makes of these raw bytes, read by a recipe
        straight from them; None when the line must be decoded, cleaned and parsed (parse_line).

        Keyed by the raw bytes with digits zeroed: lines of one such key lose the same prefix to
        cleaning (see stripped_prefix), so their texts share a key too, and so a recipe."""
        if len(raw) > MAX_CACHED_LINE:
            return None
        key = raw.translate(DIGIT_BYTES_TO_ZERO)
        if key not in self.raw_recipes:
            if not _again(key, self.raw_seen_once):
                return None
            if len(self.raw_recipes) >= MAX_TEMPLATES:
                self.raw_recipes.clear()
            self.raw_recipes[key] = self._learn_raw(raw)
        recipe = self.raw_recipes[key]
        return None if recipe is None else recipe.apply(raw, line)

    def _learn_raw(self, raw: bytes) -> _Recipe | None:
        prefix = stripped_prefix(raw, self.prefix)
        if prefix is None:
            return None
        text = raw[prefix:].decode("ascii")
        if BYPASS.search(text):
            return None
        recipe = self._learn(text)  # of no facts for a text without an anchor
        return recipe and recipe.moved(prefix)

    def parse_line(self, text: str, line: int) -> list[Fact]:
        if len(text) > MAX_CACHED_LINE or BYPASS.search(text):
            return parse_line(text, line, self.trees.parse)
        key = text.encode("utf-8", "surrogatepass").translate(DIGIT_BYTES_TO_ZERO)
        if key not in self.recipes:  # anchors are digit-uniform too: a known key had an anchor
            if not may_state_facts(text):
                return []
            if not _again(key, self.seen_once):
                return parse_line(text, line, self.trees.parse)
            if len(self.recipes) >= MAX_TEMPLATES:
                self.recipes.clear()
            self.recipes[key] = self._learn(text)
        recipe = self.recipes[key]
        return recipe.apply(text, line) if recipe else parse_line(text, line, self.trees.parse)

    def _learn(self, text: str) -> _Recipe | None:
        facts = parse_line(text, 0, self.trees.parse)
        spans = [span.span() for span in NUMBER_SPAN.finditer(text)]
        return _learn_at_once(text, facts, spans, self.trees.parse) or self._learn_one_by_one(text, facts, spans)

    def _learn_one_by_one(self, text: str, facts: list[Fact], spans: list[tuple[int, int]]) -> _Recipe | None:
        sources: dict[tuple[int, str], tuple[int, int]] = {}
        for start, end in spans:
            probe = text[:start] + text[start:end].translate(SHIFT_DIGITS) + text[end:]
            probed = parse_line(probe, 0, self.trees.parse)
            changed = _changed_values(facts, probed)
            if changed is None:
                return None
            for index, name in changed:
                if name == PROCESS:  # "(APIServer pid=12646)": the tag is copied from the line
                    where = _copied_from(text, probe, facts[index].process, probed[index].process)
                    if where is None:
                        return None
                    sources[index, name] = where
                elif (index, name) in sources or not _reads(facts[index].values[name], text[start:end]):
                    return None
                else:
                    sources[index, name] = (start, end)
        return _recipe(facts, sources, text)


def _again(key: bytes, seen_once: set[bytes]) -> bool:
    """Whether a shape comes again; the first time, it is remembered (MAX_TEMPLATES at most)."""
    if key in seen_once:
        seen_once.discard(key)
        return True
    if len(seen_once) >= MAX_TEMPLATES:
        seen_once.clear()
    seen_once.add(key)
    return False


def _learn_at_once(text: str, facts: list[Fact], spans: list[tuple[int, int]], parse: Parse) -> _Recipe | None:
    """The recipe from one probe with every digit changed, when each changed value reads as exactly
    one number of the line before and after: a line has a dozen numbers, and a probe costs as
    much as a parse. None when that is not so (the caller then probes number by number)."""
    probe = text.translate(SHIFT_DIGITS)
    probed = parse_line(probe, 0, parse)
    changed = _changed_values(facts, probed)
    if changed is None:
        return None
    sources: dict[tuple[int, str], tuple[int, int]] = {}
    for index, name in changed:
        if name == PROCESS:
            where = _copied_from(text, probe, facts[index].process, probed[index].process)
        else:
            before, after = facts[index].values[name], probed[index].values[name]
            found = [
                (start, end)
                for start, end in spans
                if _reads(before, text[start:end]) and _reads(after, probe[start:end])
            ]
            where = found[0] if len(found) == 1 else None
        if where is None:
            return None
        sources[index, name] = where
    return _recipe(facts, sources, text)


def _recipe(facts: list[Fact], sources: dict[tuple[int, str], tuple[int, int]], text: str) -> _Recipe | None:
    """The recipe that reads these sources, unless one of them may read a value a Fact would drop."""
    readers = {place: _reader(text[start:end]) for place, (start, end) in sources.items() if place[1] != PROCESS}
    if None in readers.values():
        return None
    found = cast(dict[tuple[int, str], Reader], readers)  # None is not among them now
    plans = [
        [
            (*sources[index, name], found[index, name]) if (index, name) in sources else (0, 0, _constant(value))
            for name, value in fact.values.items()
        ]
        for index, fact in enumerate(facts)
    ]
    return _Recipe(facts, plans, [sources.get((index, PROCESS)) for index in range(len(facts))])


class _Recipe:
    __slots__ = ("facts", "plans", "process_spans", "processes")

    def __init__(
        self, facts: list[Fact], plans: list[list[tuple[int, int, Reader]]], process_spans: list[tuple[int, int] | None]
    ):
        self.facts = facts
        # Per fact, per value in order: (start, end, reader) of its number in the line.
        self.plans = plans
        self.process_spans = process_spans
        self.processes: dict[str | bytes, str] = {}  # one string per process tag, not one per line

    def moved(self, prefix: int) -> _Recipe:
        """This recipe for lines that carry `prefix` more characters in front of the text."""
        plans = [[(start + prefix, end + prefix, read) for start, end, read in plan] for plan in self.plans]
        spans = [span and (span[0] + prefix, span[1] + prefix) for span in self.process_spans]
        return _Recipe(self.facts, plans, spans)

    def apply(self, text: str | bytes, line: int) -> list[Fact]:
        """The facts of a line of this recipe's key: its text, or its raw ASCII bytes (int and float read bytes)."""
        out = []
        for fact, plan, process_span in zip(self.facts, self.plans, self.process_spans, strict=True):
            numbers = tuple([read(text[start:end]) for start, end, read in plan])
            process = fact.process
            if process_span:
                tag = text[process_span[0] : process_span[1]]
                process = self.processes.get(tag)
                if process is None:
                    process = self.processes[tag] = tag if isinstance(tag, str) else tag.decode("ascii")
            out.append(fact.like(line, numbers, process))
        return out


def _constant(value: Number) -> Reader:
    """The reader of a value that no number of the line changes."""
    return lambda _: value


def _reader(span_text: str) -> Reader | None:
    """number() for every span of this one's shape (same digit count, same point), made cheap: with
    a point it is float(); up to 15 digits a float holds the integer exactly, so it is int().

    None when a span of this shape may read a value that a Fact drops (facts.plausible): up to 15
    digits before the point stay below MAX_FIGURE, up to 6 after it reach MIN_FIGURE unless all 0.
    """
    whole, point, decimals = span_text.partition(".")
    if len(whole) > 15 or len(decimals) > 6:
        return None
    return float if point else int


def _changed_values(facts: list[Fact], probed: list[Fact]) -> list[tuple[int, str]] | None:
    """The (fact index, value name) pairs that differ, or None when more than values changed."""
    if len(facts) != len(probed):
        return None
    changed = []
    for index, (fact, other) in enumerate(zip(facts, probed, strict=False)):
        if (fact.kind, fact.text, fact.args, fact.level, fact.values.keys()) != (
            other.kind,
            other.text,
            other.args,
            other.level,
            other.values.keys(),
        ):
            return None
        if fact.process != other.process:
            changed.append((index, PROCESS))
        changed += [
            (index, name)
            for name, value in fact.values.items()
            if (type(value), value) != (type(other.values[name]), other.values[name])
        ]
    return changed


def _reads(value: Number, span_text: str) -> bool:
    """Whether a value is exactly number() of this span, type included."""
    read = number(span_text)
    return (type(value), value) == (type(read), read)


def _copied_from(text: str, probe: str, process: str | None, probed: str | None) -> tuple[int, int] | None:
    """Where the process tag sits in the line, if the probe's tag sits at the same place."""
    if not process or not probed:
        return None
    start = text.find(process)
    if start < 0 or probe[start : start + len(process)] != probed:
        return None
    return start, start + len(process)
