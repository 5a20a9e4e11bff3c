"""What the grammar reads of a catalogued wording: its facts, each value named by the placeholder that printed it."""

from __future__ import annotations

from samples import fill, lines

from advisor.parse.facts import number
from advisor.parse.grammar import parse_line

# What the grammar says of any line it has no words for: an exception's or an error record's bare words, a cut.
GENERIC = {"exception", "error_record", "cut"}


class ErasDisagree(ValueError):
    """The wording is read differently in the log envelope of one era than in another's."""


def read(entry: dict) -> tuple[list[dict], bool]:
    """([{"kind", "values"?}, ...] of the non-generic facts, in line order; whether it reads as an exception).

    A value is named by the position of the placeholder whose sample printed it; a value that no single
    placeholder printed (a unit converted, a number inside a hinted sample) is left out.
    """
    _, texts = fill(entry["template"], entry["style"], entry.get("samples"))
    printed = [_number(text) for text in texts]
    readings = []
    for line in lines(entry):
        facts = parse_line(line, 1)
        named = [_named(fact.kind, fact.values, printed) for fact in facts if fact.kind not in GENERIC]
        readings.append((named, any(fact.kind == "exception" for fact in facts)))
    if any(reading != readings[0] for reading in readings):
        raise ErasDisagree(f"{readings[0]} in one era, {readings[-1]} in another")
    return readings[0]


def _named(kind: str, values: dict, printed: list[float | None]) -> dict:
    """The fact, each value named by the one placeholder that printed it."""
    named = {name: printed.index(value) for name, value in values.items() if printed.count(value) == 1}
    return {"kind": kind, "values": named} if named else {"kind": kind}


def _number(text: str) -> float | None:
    try:
        return number(text)
    except ValueError:
        return None
