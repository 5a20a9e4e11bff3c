"""A rule's condition, judged on each event of a run: its expression over the names it reads."""

from __future__ import annotations

import ast
from functools import cache
from typing import Any

from advisor.rules.expressions import compile_expression, compiled


class Condition:
    """evaluate(when, run names with the event's own names over them), reading only the names `when` reads.

    A condition reads a run's names and an event's own names over them (never the arithmetic, which
    is worked out once a rule fires). The run's names are looked up once; for each event only the
    few names the expression reads are taken from its own, not the whole context merged.
    """

    def __init__(self, when: str, run: dict[str, Any] | None = None):
        self.names = names_read(when)
        self.evaluate = compiled(when)
        run = run or {}
        self.from_run = {name: run[name] for name in self.names if name in run}

    def __call__(self, own: dict[str, Any]) -> Any:
        """The outcome on an event of these own names."""
        names = dict(self.from_run)
        for name in self.names:
            if name in own:
                names[name] = own[name]
        return self.evaluate(names)


@cache
def names_read(expression: str) -> tuple[str, ...]:
    """Every name an expression reads (called function names too: harmless in a key)."""
    return tuple(sorted({node.id for node in ast.walk(compile_expression(expression)) if isinstance(node, ast.Name)}))
