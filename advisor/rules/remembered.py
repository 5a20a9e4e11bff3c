"""What rule matching remembers across a run's events: most stats lines change nothing a rule reads."""
from __future__ import annotations

import ast
import math
from functools import cache
from typing import Any

from advisor.rules.expressions import compile_expression, evaluate
from advisor.rules.remedies import arithmetic

_ABSENT = object()
NEGATIVE_ZERO = "-0.0"
MAX_REMEMBERED = 4096  # outcomes kept per condition: a run of ever-new values just clears and refills


class RememberedArithmetic:
    """remedies.arithmetic over a run's names with an event's own names on top, computed again only
    when an own name it read has changed.

    Exact because arithmetic is a pure function of the names it reads (through get, [] and in) and
    the run's names are the same for every event: a day of stats lines, whose own names it reads
    none of, costs one computation. `key` stands for what it was computed from: two events with
    the same key get the same result.
    """

    def __init__(self, run: dict[str, Any] | None = None) -> None:
        self.run = run or {}
        self.result: dict[str, Any] | None = None
        self.read: frozenset[str] = frozenset()  # every name the last computation read
        self.own: frozenset[str] = frozenset()  # those of them the event held itself
        self.key: tuple = ()  # those own names in reading order, their values and their kinds

    def __call__(self, own: dict[str, Any]) -> dict[str, Any]:
        # The names read that the event does not hold come from the run: only the others can change.
        if self.result is not None and (self.read.isdisjoint(own) if not self.own else self._unchanged(own)):
            return self.result
        reading = _Reading({**self.run, **own})
        self.result = arithmetic(reading)
        self.read = frozenset(reading.read)
        names = tuple([name for name in reading.read if name in own])
        values = tuple([own[name] for name in names])
        self.own, self.key = frozenset(names), (names, values, kinds(values))
        return self.result

    def _unchanged(self, own: dict[str, Any]) -> bool:
        names, then, then_kinds = self.key
        if self.read.intersection(own) != self.own:
            return False
        now = tuple([own[name] for name in names])
        return now == then and kinds(now) == then_kinds


class _Reading(dict):
    """A dict that notes every name read from it, and what it held (_ABSENT when nothing)."""

    def __init__(self, names: dict[str, Any]):
        super().__init__(names)
        self.read: dict[str, Any] = {}

    def get(self, name: str, default: Any = None) -> Any:
        value = self.read[name] = super().get(name, _ABSENT)
        return default if value is _ABSENT else value

    def __getitem__(self, name: str) -> Any:
        self.read[name] = value = super().__getitem__(name)
        return value

    def __contains__(self, name: object) -> bool:
        self.read[name] = super().get(name, _ABSENT)
        return super().__contains__(name)


class RememberedCondition:
    """evaluate(when, context), remembered by the values (and kinds) of the names `when` reads.

    A context is a run's names, an event's own names over them and the arithmetic over both. Within
    a run only the own names and the arithmetic differ, so the outcome is remembered by the own
    names `when` reads and the arithmetic's key. Exact because an expression reads the context only
    through its names: stats lines that repeat those values (the same kind, no preemptions, the same
    cache usage) repeat the outcome.
    """

    def __init__(self, when: str, run: dict[str, Any] | None = None):
        self.when, self.names, self.run = when, names_read(when), run or {}
        self.absent = (_ABSENT,) * len(self.names)
        self.outcomes: dict[tuple, Any] = {}

    def __call__(self, own: dict[str, Any], derived: dict[str, Any] | None = None, key: Any = ()) -> Any:
        """The outcome on an event: its own names, and the arithmetic `derived` of this key."""
        values = tuple(map(own.get, self.names, self.absent))
        types = tuple(map(type, values)) if 0 not in values else kinds(values)  # kinds(), quicker
        try:
            return self.outcomes[key, values, types]
        except KeyError:
            pass
        except TypeError:  # a list (frames) is no key
            return evaluate(self.when, {**self.run, **own, **(derived or {})})
        if len(self.outcomes) >= MAX_REMEMBERED:
            self.outcomes.clear()
        outcome = self.outcomes[key, values, types] = evaluate(self.when, {**self.run, **own, **(derived or {})})
        return outcome


@cache
def names_read(expression: str) -> tuple[str, ...]:
    """Every name an expression reads (called function names too: harmless in a key)."""
    return tuple(sorted({node.id for node in ast.walk(compile_expression(expression)) if isinstance(node, ast.Name)}))


def kinds(values: tuple) -> tuple:
    """What equal values must share to act alike: 1 and 1.0 are equal but print differently, and
    so do 0.0 and -0.0 (NaN equals nothing, so it is never remembered)."""
    if 0 not in values:  # no zero, so no negative zero: the types say it all
        return tuple(map(type, values))
    return tuple([NEGATIVE_ZERO if type(value) is float and not value and math.copysign(1.0, value) < 0
                  else type(value) for value in values])
