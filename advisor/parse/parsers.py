"""The Lark grammars loaded: the envelope's and the messages' parsers (their tables cached on disk), and
the notes the grammar files write above their terminals."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import lark
from lark import Lark

from advisor import caching


def data_dir(name: str) -> Path:
    """A data folder shipped in the wheel (advisor/data/grammars), or the repository's top-level one."""
    packaged = Path(str(resources.files("advisor"))) / "data" / name
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[2] / name


# A note on the terminal defined below it, in a grammar file: `// KEY: JSON`.
NOTE = re.compile(r"^// ([a-z-]+): (.+)$")


TERMINAL = re.compile(r"^([A-Z][A-Z0-9_]*)(?:\.-?\d+)?\s*:")


@cache
def terminal_notes(key: str) -> dict[str, Any]:
    """The notes of one key on the grammars' terminals, by terminal name. A regex anchor's `literals`
    are words of which every match holds one (the prefilter looks for them in raw bytes, find_anchor
    in a line's text); a `digit-sensitive` terminal tells one digit from another, and its note is a
    digit-uniform regex finding every line where it could match (those lines bypass the shape cache)."""
    notes: dict[str, Any] = {}
    for path in sorted(data_dir("grammars").glob("*.lark")):
        pending: dict[str, Any] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            if note := NOTE.match(line):
                pending[note[1]] = json.loads(note[2])
            elif terminal := TERMINAL.match(line):
                if key in pending:
                    notes[terminal[1]] = pending[key]
                pending = {}
    return notes


@cache
def envelope_parser() -> Lark:
    return _lalr_parser("envelope.lark")


@cache
def message_parser() -> Lark:
    return _lalr_parser("messages.lark")


def _lalr_parser(file_name: str) -> Lark:
    """The LALR parser of a grammar file, its tables loaded from the user's cache when built before:
    building them takes longer than analysing a small log (lark checks the grammar's hash on load)."""
    grammar = (data_dir("grammars") / file_name).read_text(encoding="utf-8")
    # Kept under the grammar's and lark's versions, so installed versions of the advisor never share one.
    return caching.kept(
        "grammar",
        (lark.__version__.encode(), grammar.encode()),
        lambda: Lark(grammar, parser="lalr", lexer="contextual"),
        load=Lark.load,
        dump=lambda parser, out: parser.save(out),
        suffix="lark-tables",
    )


@cache
def literal_terminals() -> dict[str, str]:
    """The words of the message grammar's string terminals, by terminal name."""
    return {t.name: t.pattern.value for t in message_parser().terminals if t.pattern.type == "str"}
