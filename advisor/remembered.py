"""What rule matching remembers across a run's events: most stats lines change nothing a rule reads."""
from __future__ import annotations

import ast
import math
from functools import cache
from typing import Any

from .expressions import compile_expression, evaluate
from .remedies import arithmetic

_ABSENT = object()
NEGATIVE_ZERO = "-0.0"
MAX_REMEMBERED = 4096  # outcomes kept per condition: a run of ever-new values just clears and refills


class RememberedArithmetic:
    """remedies.arithmetic for a run's events, computed again only when a name it read has changed.

    Exact because arithmetic is a pure function of the names it reads (through get and []):
    the stats lines of a run change none of them, so a day of stats lines costs one computation.
    """

    def __init__(self) -> None:
        self.result: dict[str, Any] | None = None
        self.names: tuple[str, ...] = ()
        self.values: tuple[Any, ...] = ()
        self.types: tuple[type, ...] = ()

    def __call__(self, names: dict[str, Any]) -> dict[str, Any]:
        if self.result is not None:
            now = tuple([names.get(name, _ABSENT) for name in self.names])
            if now == self.values and kinds(now) == self.types:
                return self.result
        reading = _Reading(names)
        self.result = arithmetic(reading)
        self.names, self.values = tuple(reading.read), tuple(reading.read.values())
        self.types = kinds(self.values)
        return self.result


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

    Exact because an expression reads the context only through its names: stats lines that repeat
    those values (the same kind, no preemptions, the same cache usage) repeat the outcome.
    """

    def __init__(self, when: str):
        self.when, self.names = when, names_read(when)
        self.outcomes: dict[tuple, Any] = {}

    def __call__(self, context: dict[str, Any]) -> Any:
        values = tuple([context.get(name) for name in self.names])
        key = (values, kinds(values))
        try:
            return self.outcomes[key]
        except KeyError:
            pass
        except TypeError:  # a list (kinds, frames) is no key
            return evaluate(self.when, context)
        if len(self.outcomes) >= MAX_REMEMBERED:
            self.outcomes.clear()
        outcome = self.outcomes[key] = evaluate(self.when, context)
        return outcome


@cache
def names_read(expression: str) -> tuple[str, ...]:
    """Every name an expression reads (called function names too: harmless in a key)."""
    return tuple(sorted({node.id for node in ast.walk(compile_expression(expression)) if isinstance(node, ast.Name)}))


def kinds(values: tuple) -> tuple:
    """What equal values must share to act alike: 1 and 1.0 are equal but print differently, and
    so do 0.0 and -0.0 (NaN equals nothing, so it is never remembered)."""
    return tuple([NEGATIVE_ZERO if type(value) is float and not value and math.copysign(1.0, value) < 0
                  else type(value) for value in values])
