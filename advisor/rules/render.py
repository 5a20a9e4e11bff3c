"""Rendering a finding: its sentences filled from the context, its flags evaluated."""

from __future__ import annotations

import string
from typing import Any

from advisor.rules.expressions import evaluate
from advisor.rules.schema import Remediation


class _Template(string.Formatter):
    def format_field(self, value: Any, spec: str) -> str:
        if isinstance(value, float) and not spec:
            return _short(value)
        text: str = super().format_field(value, spec)
        return text


def render(sentences: list[str] | str, context: dict[str, Any]) -> str:
    """Join the sentences whose every placeholder is known; skip the others."""
    formatter, out = _Template(), []
    for sentence in [sentences] if isinstance(sentences, str) else sentences:
        fields = [name for _, name, _, _ in formatter.parse(sentence) if name]
        if all(context.get(name) is not None for name in fields):
            out.append(formatter.format(sentence, **context))
    return " ".join(out)


def flag_values(remediation: Remediation, context: dict[str, Any]) -> dict[str, str | None] | None:
    """Evaluate a remediation's flags; None when it does not apply or a value cannot be computed."""
    if not evaluate(remediation.when, context):
        return None
    flags: dict[str, str | None] = {}
    for flag, expression in remediation.flags.items():
        if expression.strip() == "None":  # the remediation removes this flag
            flags[flag] = None
            continue
        value = evaluate(expression, context)
        if value is None or value is False:
            return None
        flags[flag] = _as_flag(value)
    return flags


def _as_flag(value: Any) -> str | None:
    if value is True:
        return ""
    if isinstance(value, float):
        return _short(value)
    return str(value)


def _short(value: float) -> str:
    """0.9 -> '0.9', 0.0 -> '0.0', 1.23456 -> '1.2346': as printed, never a long tail."""
    text = f"{value:.4f}".rstrip("0")
    return text + "0" if text.endswith(".") else text
