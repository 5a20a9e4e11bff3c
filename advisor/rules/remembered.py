"""What rule matching remembers across a run's events: most stats lines change nothing a rule reads."""

from __future__ import annotations

import ast
import math
from functools import cache
from typing import Any

from advisor.rules.expressions import compile_expression, evaluate

_ABSENT = object()
NEGATIVE_ZERO = "-0.0"
MAX_REMEMBERED = 4096  # outcomes kept per condition: a run of ever-new values just clears and refills


class RememberedCondition:
    """evaluate(when, context), remembered by the values (and kinds) of the names `when` reads.

    A condition reads a run's names and an event's own names over them (never the arithmetic, which
    is worked out once a rule fires). Within a run only the own names differ, so the outcome is
    remembered by the own names `when` reads. Exact because an expression reads the context only
    through its names: stats lines that repeat those values (the same kind, no preemptions, the same
    cache usage) repeat the outcome.
    """

    def __init__(self, when: str, run: dict[str, Any] | None = None):
        self.when, self.names, self.run = when, names_read(when), run or {}
        self.absent = (_ABSENT,) * len(self.names)
        self.outcomes: dict[tuple[tuple[Any, ...], tuple[object, ...]], Any] = {}

    def __call__(self, own: dict[str, Any]) -> Any:
        """The outcome on an event of these own names."""
        values = tuple(map(own.get, self.names, self.absent))
        types = tuple(map(type, values)) if 0 not in values else kinds(values)  # kinds(), quicker
        try:
            return self.outcomes[values, types]
        except KeyError:
            pass
        except TypeError:  # a list (frames) is no key
            return evaluate(self.when, {**self.run, **own})
        if len(self.outcomes) >= MAX_REMEMBERED:
            self.outcomes.clear()
        outcome = self.outcomes[values, types] = evaluate(self.when, {**self.run, **own})
        return outcome


@cache
def names_read(expression: str) -> tuple[str, ...]:
    """Every name an expression reads (called function names too: harmless in a key)."""
    return tuple(sorted({node.id for node in ast.walk(compile_expression(expression)) if isinstance(node, ast.Name)}))


def kinds(values: tuple[Any, ...]) -> tuple[object, ...]:
    """What equal values must share to act alike: 1 and 1.0 are equal but print differently, and
    so do 0.0 and -0.0 (NaN equals nothing, so it is never remembered)."""
    if 0 not in values:  # no zero, so no negative zero: the types say it all
        return tuple(map(type, values))
    return tuple(
        [
            NEGATIVE_ZERO if type(value) is float and not value and math.copysign(1.0, value) < 0 else type(value)
            for value in values
        ]
    )
