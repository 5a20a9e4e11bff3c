"""A line's envelope (its process tag, level and source file) split from its body by the envelope grammar."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import LarkError

from advisor.parse.parsers import envelope_parser

# The level of a record that is a fact whatever its message says (see parse_line).
CRITICAL = "CRITICAL"
ERROR = "ERROR"


class Envelope:
    """What the envelope grammar found: process tag, level, source file, and where the body starts."""

    __slots__ = ("body", "level", "process", "source")

    def __init__(self, process: str | None, level: str | None, body: str, source: str | None = None):
        self.process, self.level, self.body, self.source = process, level, body, source


# How a line is parsed: a Lark parser run on text (advisor.fast.templates passes one that caches its trees).
# Tree[Any]: the grammar, not the type, says which children are trees and which are tokens.
Parse = Callable[[Lark, str], Tree[Any]]


def _lark_parse(parser: Lark, text: str) -> Tree[Token]:
    return parser.parse(text)


def split_envelope(text: str, parse: Parse = _lark_parse) -> Envelope:
    try:
        tree = parse(envelope_parser(), text)
    except LarkError:
        return Envelope(None, None, text.strip())
    process = level = source = None
    body = ""
    for child in tree.children:
        if isinstance(child, Token) and child.type == "BODY":
            body = str(child)
        elif child.data == "tag" and process is None:
            process = str(child.children[0]).lstrip("(").rstrip(")").rstrip(":")
        elif child.data in ("vllm_header", "uvicorn_header"):
            level = str(child.children[0]).rstrip(":")
            fileinfo = next((str(t) for t in child.children if getattr(t, "type", "") == "FILEINFO"), None)
            source = fileinfo.strip("[]").rsplit("/", 1)[-1] if fileinfo else None
    return Envelope(process, level, body.rstrip(), source)
