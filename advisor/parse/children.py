"""A grammar rule's children as lark passes them, and the helpers that read numbers and words from them."""

from __future__ import annotations

import re
from typing import Any

from lark import Token

from advisor.parse.facts import Number, gib, number

# A rule's children as lark passes them (tokens, and the dicts of sub-rules), and the dict each rule returns.
Children = list[Any]
Parts = dict[str, Any]


def numbers(children: Children) -> list[Number]:
    return [
        gib(c) if c.type in ("SIZE", "SIZE_OR_NUMBER") and not bare(c) else number(c)
        for c in children
        if isinstance(c, Token) and c.type in ("NUMBER", "SIZE", "SIZE_OR_NUMBER")
    ]


def bare(token: Token) -> bool:
    return not re.search(r"[A-Za-z]", token)


def token(children: Children, kind: str) -> str | None:
    return next((str(c) for c in children if isinstance(c, Token) and c.type == kind), None)


def merged(children: Children) -> Parts:
    """Merge the dicts returned by sub-rules."""
    merged: Parts = {}
    for child in children:
        if isinstance(child, dict):
            merged.update(child)
    return merged


def named(names: tuple[str, ...], children: Children) -> dict[str, Number]:
    return dict(zip(names, numbers(children), strict=False))
