"""Typed facts: what one log line states, and the conversions of the numbers and arguments it prints."""

from __future__ import annotations

import ast
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

Number = int | float
# No figure vLLM prints (bytes, tokens, GiB, ratios) lies outside these bounds; outside them a
# number is junk or crafted, and arithmetic on it would overflow or produce inf/nan in the JSON.
MAX_FIGURE = 1e15
MIN_FIGURE = 1e-6


class Fact(BaseModel):
    """One statement of the log: its kind (a grammar rule), line, numbers and words."""

    model_config = ConfigDict(frozen=True)

    kind: str
    line: int
    values: dict[str, Number] = Field(default_factory=dict)
    text: dict[str, str] = Field(default_factory=dict)
    args: dict[str, Any] = Field(default_factory=dict)  # launch flags, for the corrected command
    process: str | None = None
    level: str | None = None

    def values_copy(self) -> dict[str, Number]:
        """The values in a dict of the caller's own, to add to."""
        return dict(self.values)

    @field_validator("values")
    @classmethod
    def _plausible_figures(cls, values: dict[str, Number]) -> dict[str, Number]:
        """Drop `1e999`, `nan` and absurd magnitudes instead of letting them poison the arithmetic."""
        return {name: value for name, value in values.items() if plausible(value)}


def plausible(value: Number) -> bool:
    # Compared, not converted: float() of a 400-digit int overflows; nan fails every comparison.
    return value == 0 or MIN_FIGURE <= abs(value) <= MAX_FIGURE


# Bytes per unit; logs say GB where vLLM computed GiB, so GB counts as GiB.
_UNIT_BYTES = {"GiB": 2**30, "Gib": 2**30, "GB": 2**30, "MiB": 2**20, "MB": 2**20, "KiB": 2**10, "KB": 2**10, "B": 1}
_SIZE = re.compile(r"(-?[\d,]+(?:\.\d+)?(?:e[+-]?\d+)?)\s*([A-Za-z]+)?")
# Bound what ast.literal_eval sees: a crafted args line must not exhaust memory or recursion.
MAX_ARGS_TEXT = 64 * 1024


def number(text: str) -> Number:
    """'1,048,576' -> 1048576, '0.90' -> 0.9."""
    text = text.replace(",", "")
    value = float(text)
    if "." not in text and "e" not in text.lower() and value.is_integer():
        return int(value)
    return value


def gib(text: str) -> float:
    """A size as printed ('739.81 MiB', '2.89GiB', '14.9888 GB') in GiB, 4 decimals for converted units."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a size: {text!r}")
    amount, unit = number(match[1]), (match[2] or "GiB")
    if unit in ("GiB", "Gib", "GB"):
        return float(amount)
    return round(amount * _UNIT_BYTES[unit] / 2**30, 4)


def literal_dict(text: str) -> dict[str, Any] | None:
    """Parse a printed Python dict safely; None when it is too big, too deep or not a dict."""
    if len(text) > MAX_ARGS_TEXT:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) and all(isinstance(k, str) for k in value) else None


def namespace_args(text: str) -> dict[str, Any] | None:
    """Parse 'Namespace(a=1, b='x')' keyword by keyword with literal_eval; never eval."""
    if len(text) > MAX_ARGS_TEXT:
        return None
    try:
        call = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(call, ast.Call):
        return None
    args = {}
    for keyword in call.keywords:
        if keyword.arg is None:  # **kwargs: no flag name
            continue
        try:
            args[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, SyntaxError, TypeError, RecursionError):
            continue  # a value that is not a literal (a function, a type) is not a flag we rebuild
    return args


def config_pairs(text: str) -> dict[str, str]:
    """Split an engine config string on top-level ', key=' (values hold reprs and nested dicts)."""
    pairs, depth, quote, start = {}, 0, "", 0
    boundaries = []
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote and text[i - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            boundaries.append(i)
    for end in boundaries + [len(text)]:
        key, sep, value = text[start:end].strip().partition("=")
        if sep and re.fullmatch(r"[a-z_]+", key):
            pairs[key] = value.strip()
        start = end + 1
    return pairs
