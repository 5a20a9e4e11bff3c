"""The Lark grammars: split a line into its envelope and body, and find the messages in the body."""
from __future__ import annotations

import re
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import LarkError

from .facts import Fact, ToFacts

# Facts about the shape of a traceback count only where they start the line's body;
# elsewhere "ValueError" or 'File "' is just a word inside a sentence.
STRUCTURAL = {"traceback_start", "frame", "exception"}


def data_dir(name: str) -> Path:
    """A data folder shipped in the wheel (advisor/grammars), or the repository's top-level one."""
    packaged = Path(str(resources.files("advisor"))) / name
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / name


@cache
def envelope_parser() -> Lark:
    return Lark((data_dir("grammars") / "envelope.lark").read_text(), parser="lalr", lexer="contextual")


@cache
def message_parser() -> Lark:
    return Lark((data_dir("grammars") / "messages.lark").read_text(), parser="lalr", lexer="contextual")


@cache
def anchor_patterns() -> tuple[str, ...]:
    """The regular expressions of the anchor terminals (A_*): the words a message can start with."""
    return tuple(t.pattern.to_regexp() for t in message_parser().terminals if t.name.startswith("A_"))


@cache
def anchor_regex() -> re.Pattern:
    return re.compile("|".join(f"(?:{p})" for p in anchor_patterns()))


class Envelope:
    """What the envelope grammar found: process tag, level, source file, and where the body starts."""

    __slots__ = ("process", "level", "body")

    def __init__(self, process: str | None, level: str | None, body: str):
        self.process, self.level, self.body = process, level, body


def split_envelope(text: str) -> Envelope:
    try:
        tree = envelope_parser().parse(text)
    except LarkError:
        return Envelope(None, None, text.strip())
    process = level = None
    body = ""
    for child in tree.children:
        if isinstance(child, Token) and child.type == "BODY":
            body = str(child)
        elif child.data == "tag" and process is None:
            process = str(child.children[0]).lstrip("(").rstrip(")").rstrip(":")
        elif child.data in ("vllm_header", "uvicorn_header"):
            level = str(child.children[0]).rstrip(":")
    return Envelope(process, level, body.rstrip())


def parse_line(text: str, line: int) -> list[Fact]:
    """Every fact a line states, in order. Lines without an anchor cost one regex search."""
    if not anchor_regex().search(text):
        return []
    return [fact.model_copy(update={"line": line}) for fact in _facts_of_text(text)]


# Tracebacks and retries repeat the same lines (a recursion prints one frame a million times):
# parse each distinct text once. Lines are at most sources.MAX_LINE long, so the cache stays small.
@lru_cache(maxsize=256)
def _facts_of_text(text: str) -> tuple[Fact, ...]:
    envelope = split_envelope(text)
    return tuple(Fact(kind=kind, line=0, values=values, text=words, args=args,
                      process=envelope.process, level=envelope.level)
                 for kind, values, words, args in messages(envelope.body))


def messages(body: str):
    """Yield (kind, values, text, args) for each message found in a line's body."""
    position = 0
    while (match := anchor_regex().search(body, position)) is not None:
        start = match.start()
        try:
            tree = message_parser().parse(body[start:])
        except LarkError:
            position = start + 1
            continue
        message, rest = tree.children[0], _rest(tree)
        kind = message.data if isinstance(message, Tree) else "unknown"
        if kind in STRUCTURAL and body[:start].strip():
            position = start + 1
            continue
        parts = ToFacts().transform(message) or {}
        words = dict(parts.get("text", {}))
        if kind == "exception":
            words["message"] = (rest.lstrip(":( ") if rest else "")[:500]
        yield str(kind), parts.get("values", {}), words, parts.get("args", {})
        if rest is None:
            return
        position = len(body) - len(rest)  # REST is the suffix of the body after this message


def _rest(tree: Tree) -> str | None:
    last = tree.children[-1]
    return str(last) if isinstance(last, Token) and last.type == "REST" else None
