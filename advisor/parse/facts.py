"""Typed facts: what one log line states, and the conversions of the numbers and arguments it prints."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from typing import Any

Number = int | float
# No figure vLLM prints (bytes, tokens, GiB, ratios) lies outside these bounds; outside them a
# number is junk or crafted, and arithmetic on it would overflow or produce inf/nan in the JSON.
MAX_FIGURE = 1e15
MIN_FIGURE = 1e-6


class Fact:
    """One statement of the log: its kind (a grammar rule), line, numbers and words.

    The numbers are kept as a tuple beside a tuple of their names: the facts that the fast path reads
    from one learned line shape (fast.templates) share their names, words and arguments, and differ
    only in line and numbers, so a day of stats lines fits in little memory. `values` makes the dict
    on each read, one of the caller's own."""

    __slots__ = ("args", "kind", "level", "line", "names", "numbers", "process", "text")

    def __init__(
        self,
        kind: str,
        line: int,
        values: dict[str, Number] | None = None,
        text: dict[str, str] | None = None,
        args: dict[str, Any] | None = None,  # launch flags, for the corrected command
        process: str | None = None,
        level: str | None = None,
    ):
        # Drop `1e999`, `nan` and absurd magnitudes instead of letting them poison the arithmetic.
        kept = {name: value for name, value in values.items() if plausible(value)} if values else {}
        self.kind, self.line, self.process, self.level = kind, line, process, level
        self.names, self.numbers = tuple(kept), tuple(kept.values())
        self.text = text if text is not None else {}
        self.args = args if args is not None else {}

    def like(self, line: int, numbers: tuple[Number, ...], process: str | None) -> Fact:
        """A fact of this one's kind, names, words and level, with its own line, numbers and process.
        The numbers are the caller's to make plausible: fast.templates reads only spans that are."""
        return _made(self.kind, line, self.names, numbers, self.text, self.args, process, self.level)

    @property
    def values(self) -> dict[str, Number]:
        return dict(zip(self.names, self.numbers, strict=True))

    def _fields(self) -> tuple[str, int, dict[str, Number], dict[str, str], dict[str, Any], str | None, str | None]:
        return self.kind, self.line, self.values, self.text, self.args, self.process, self.level

    def __eq__(self, other: object) -> bool:
        return self._fields() == other._fields() if isinstance(other, Fact) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal by value, and not frozen

    def __reduce__(self) -> tuple[Callable[..., Fact], tuple[Any, ...]]:
        # To another process: a short tuple, in which pickle sends shared names and words once.
        return _made, (self.kind, self.line, self.names, self.numbers, self.text, self.args, self.process, self.level)

    def __repr__(self) -> str:
        fields = ("kind", "line", "values", "text", "args", "process", "level")
        return (
            "Fact(" + ", ".join(f"{name}={value!r}" for name, value in zip(fields, self._fields(), strict=True)) + ")"
        )


def _made(
    kind: str,
    line: int,
    names: tuple[str, ...],
    numbers: tuple[Number, ...],
    text: dict[str, str],
    args: dict[str, Any],
    process: str | None,
    level: str | None,
) -> Fact:
    fact = Fact.__new__(Fact)
    fact.kind, fact.line, fact.names, fact.numbers = kind, line, names, numbers
    fact.text, fact.args, fact.process, fact.level = text, args, process, level
    return fact


def plausible(value: Number) -> bool:
    # Compared, not converted: float() of a 400-digit int overflows; nan fails every comparison.
    return value == 0 or MIN_FIGURE <= abs(value) <= MAX_FIGURE


# Bytes per unit; logs say GB where vLLM computed GiB, so GB counts as GiB.
_UNIT_BYTES = {
    "GiB": 2**30,
    "Gib": 2**30,
    "GB": 2**30,
    "MiB": 2**20,
    "MB": 2**20,
    "KiB": 2**10,
    "KB": 2**10,
    "B": 1,
    "bytes": 1,
}
_SIZE = re.compile(r"(-?[\d,]+(?:\.\d+)?(?:e[+-]?\d+)?)\s*([A-Za-z]+)?")
# Bound what ast.literal_eval sees: a crafted args line must not exhaust memory or recursion.
MAX_ARGS_TEXT = 64 * 1024
# An object's repr in printed arguments, "<LoadFormat.AUTO: 'auto'>", "<function cmd at 0x7f...>": no
# Python expression.
BRACKETS = {"(": ")", "[": "]", "{": "}"}
OBJECT_REPR = re.compile(r"<[\w.]+[: ][^<>]*>")


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


def literal_dict(text: str) -> tuple[dict[str, Any], list[str]] | None:
    """Parse a printed Python dict safely, key by key: its literal items, and the keys whose value is no
    literal (vLLM 0.9's LoRAModulePath(...), an enum's <Format.AUTO: 'auto'>), left out; None when it
    is too big, too deep or not a dict."""
    tree = _expression(text)
    if not isinstance(tree, ast.Dict):
        return None
    out, left_out = {}, []
    for key, value in zip(tree.keys, tree.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        try:
            out[key.value] = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError, RecursionError):
            left_out.append(key.value)
    return out, left_out


def namespace_args(text: str) -> tuple[dict[str, Any], list[str]] | None:
    """Parse 'Namespace(a=1, b='x')' keyword by keyword with literal_eval, never eval: its literal
    arguments, and the names of those that are no literal (a function, a type), left out."""
    call = _expression(text)
    if not isinstance(call, ast.Call):
        return None
    args, left_out = {}, []
    for keyword in call.keywords:
        if keyword.arg is None:  # **kwargs: no flag name
            continue
        try:
            args[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, SyntaxError, TypeError, RecursionError):
            left_out.append(keyword.arg)
    return args, left_out


def whole_items(text: str) -> str | None:
    """A printed dict or call that a cut line ended before its closing bracket, as far as its last whole
    item and closed there ("Namespace(a=1, b='x', c" -> "Namespace(a=1, b='x')"); None when it is not
    cut so, or holds no whole item."""
    opened: list[str] = []
    last_item_end = None
    for at, char in _unquoted(text):
        if char in BRACKETS:
            opened.append(BRACKETS[char])
        elif char in BRACKETS.values():
            if not opened or opened.pop() != char:
                return None
            if not opened:  # closed at the top level: the text is whole
                return None
        elif char == "," and len(opened) == 1:
            last_item_end = at
    if not opened or last_item_end is None:
        return None
    return text[:last_item_end] + opened[0]


def _expression(text: str) -> ast.expr | None:
    """The syntax tree of a printed expression (never evaluated), its object reprs made names (no literal, so
    left out); None when it is too big to read or no expression."""
    if len(text) > MAX_ARGS_TEXT:
        return None
    for attempt in (text, OBJECT_REPR.sub("object_repr", text)):
        try:
            return ast.parse(attempt, mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
    return None


def config_pairs(text: str) -> dict[str, str]:
    """Split an engine config string on top-level ', key=' (values hold reprs and nested dicts)."""
    pairs, depth, start = {}, 0, 0
    boundaries = []
    for i, char in _unquoted(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            boundaries.append(i)
    for end in [*boundaries, len(text)]:
        key, sep, value = text[start:end].strip().partition("=")
        if sep and re.fullmatch(r"[a-z_]+", key):
            pairs[key] = value.strip()
        start = end + 1
    return pairs


def _unquoted(text: str) -> Iterator[tuple[int, str]]:
    """Each character of a printed expression outside its quoted strings, with its position (a quote
    a backslash escapes does not end its string)."""
    quote = ""
    for at, char in enumerate(text):
        if quote:
            quote = "" if char == quote and text[at - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        else:
            yield at, char
