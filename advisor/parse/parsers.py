"""The Lark grammars loaded: the envelope's and the messages' parsers (their tables cached on disk), and
the notes the grammar files write above their terminals."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import lark
from lark import Lark


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
    cache_file = _cache_file(grammar)
    if cache_file is not None:
        try:
            with open(cache_file, "rb") as saved:
                return Lark.load(saved)
        except Exception:  # missing, cut short, or not lark's: built again below and saved anew
            pass
    parser = Lark(grammar, parser="lalr", lexer="contextual")
    if cache_file is not None:
        _save(parser, cache_file)
    return parser


def _save(parser: Lark, cache_file: str) -> None:
    # Written aside and renamed into place: advisors started together (pre-commit runs several)
    # never read tables another is still writing.
    part = f"{cache_file}.{os.getpid()}.part"
    try:
        with open(part, "wb") as out:
            parser.save(out)
        os.replace(part, cache_file)
    except OSError:  # a full or read-only cache: the tables are built again next time
        with contextlib.suppress(OSError):
            os.unlink(part)


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
def literal_terminals() -> dict[str, str]:
    """The words of the message grammar's string terminals, by terminal name."""
    return {t.name: t.pattern.value for t in message_parser().terminals if t.pattern.type == "str"}
