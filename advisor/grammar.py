"""The Lark grammars: split a line into its envelope and body, and find the messages in the body."""
from __future__ import annotations

import hashlib
import os
import re
from functools import cache
from importlib import resources
from pathlib import Path

import lark

from lark import Lark, Token, Tree
from lark.exceptions import LarkError

from .facts import Fact
from .messages import ToFacts

# Facts about the shape of a traceback count only where they start the line's body;
# elsewhere "ValueError" or 'File "' is just a word inside a sentence.
STRUCTURAL_ANCHORS = {"A_TRACEBACK", "A_FILE", "A_EXCEPTION"}
# Real lines state a few messages; a hostile one full of anchors must not cost a parse per anchor.
MAX_ANCHORS_PER_LINE = 32


def data_dir(name: str) -> Path:
    """A data folder shipped in the wheel (advisor/grammars), or the repository's top-level one."""
    packaged = Path(str(resources.files("advisor"))) / name
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / name


@cache
def envelope_parser() -> Lark:
    return _lalr_parser("envelope.lark")


@cache
def message_parser() -> Lark:
    return _lalr_parser("messages.lark")


def _lalr_parser(file_name: str) -> Lark:
    """The LALR parser of a grammar file, its tables loaded from the user's cache when built before:
    building them takes longer than analysing a small log (lark checks the grammar's hash on load)."""
    grammar = (data_dir("grammars") / file_name).read_text()
    return Lark(grammar, parser="lalr", lexer="contextual", cache=_cache_file(grammar) or False)


def _cache_file(grammar: str) -> str | None:
    """A file for the parser tables in $XDG_CACHE_HOME/vllm-advisor, or None where none can be made.

    Named by the grammar's and lark's versions, so installed versions of the advisor never share one.
    """
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(home) / "vllm-advisor"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home, a sandbox: build the tables every time
        return None
    digest = hashlib.sha256(f"{lark.__version__}\n{grammar}".encode()).hexdigest()[:16]
    return str(folder / f"grammar-{digest}.lark-tables")


@cache
def anchor_terminals() -> tuple[tuple[str, str], ...]:
    """(name, regular expression) of each anchor terminal (A_*): the words a message can start with."""
    return tuple((t.name, t.pattern.to_regexp()) for t in message_parser().terminals if t.name.startswith("A_"))


def anchor_patterns() -> tuple[str, ...]:
    return tuple(pattern for _, pattern in anchor_terminals())


@cache
def anchor_regex() -> re.Pattern:
    """All anchors in one pattern; the name of the group that matched is the anchor's terminal."""
    return re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in anchor_terminals()))


class Envelope:
    """What the envelope grammar found: process tag, level, source file, and where the body starts."""

    __slots__ = ("process", "level", "body")

    def __init__(self, process: str | None, level: str | None, body: str):
        self.process, self.level, self.body = process, level, body


def _lark_parse(parser: Lark, text: str) -> Tree:
    return parser.parse(text)


def split_envelope(text: str, parse=_lark_parse) -> Envelope:
    try:
        tree = parse(envelope_parser(), text)
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


def parse_line(text: str, line: int, parse=_lark_parse) -> list[Fact]:
    """Every fact a line states, in order. Lines without an anchor cost one regex search.

    `parse(parser, text) -> Tree` runs a Lark parser; advisor.templates passes a caching one.
    """
    if not anchor_regex().search(text):
        return []
    envelope = split_envelope(text, parse)
    facts: list[Fact] = []
    for kind, values, words, args in messages(envelope.body, parse):
        facts.append(Fact(kind=kind, line=line, values=values, text=words, args=args,
                          process=envelope.process, level=envelope.level))
    return facts


def messages(body: str, parse=_lark_parse):
    """Yield (kind, values, text, args) for each message found in a line's body."""
    position, attempts = 0, 0
    while (match := anchor_regex().search(body, position)) is not None and attempts < MAX_ANCHORS_PER_LINE:
        start, attempts = match.start(), attempts + 1
        if match.lastgroup in STRUCTURAL_ANCHORS and body[:start].strip():
            position = start + 1
            continue
        try:
            tree = parse(message_parser(), body[start:])
        except LarkError:
            position = start + 1
            continue
        message, rest = tree.children[0], _rest(tree)
        kind = message.data if isinstance(message, Tree) else "unknown"
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
