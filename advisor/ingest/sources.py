"""Sources: read bytes (file, stdin, .gz), split them into numbered lines, and unwrap each one."""

from __future__ import annotations

import gzip
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from advisor.ingest.unwrap import CUT_FROM_INSIDE, RAY_NOTE, clean, glued_records, journal_message

# A line longer than this is cut: a 200 MB "line" is binary junk, not a message.
MAX_LINE = 64 * 1024
READ_CHUNK = 1 << 20

# Line breaks inside one physical line: a lone CR (a progress bar redrawn in place), or the
# newlines inside one journald record's MESSAGE.
BREAKS = re.compile(r"\r\n|[\r\n]")


@dataclass(frozen=True, slots=True)
class Line:
    """One physical line of the input: its 1-based number and the unwrapped text."""

    number: int
    text: str


def lines(chunks: Iterable[bytes]) -> Iterator[Line]:
    """Split byte chunks on LF into numbered, decoded, cleaned lines.

    A lone CR (a progress bar redrawn in place) separates segments of one physical line:
    each segment is yielded with that line's number, so nothing printed is lost; so is each of the
    records that a paste glued onto one line (unwrap.glued_records). A journald
    JSON record is one physical line too; a record without a MESSAGE yields nothing.
    """
    number, pending = 0, b""
    for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for raw in complete:
            number += 1
            yield from line_segments(number, raw)
        if len(pending) > MAX_LINE:  # never buffer an endless line
            pending = pending[:MAX_LINE]
    if pending:
        yield from line_segments(number + 1, pending)


def line_segments(number: int, raw: bytes) -> Iterator[Line]:
    """The cleaned text of one physical line (without its LF), in as many segments as it has breaks."""
    text = raw[:MAX_LINE].decode("utf-8", errors="replace").rstrip("\r")
    unwrapped = journal_message(text) if "MESSAGE" in text else text
    if unwrapped is None:
        return
    text = unwrapped
    for segment in BREAKS.split(text) if ("\r" in text or "\n" in text) else (text,):
        for record in glued_records(clean(segment)):
            yield Line(number, record)


# What makes line_segments do more to a line than decode it and strip wrappers from its start: a CR
# or LF splits it, MESSAGE may mean a journald record, what unwrap cuts from inside a line or off its
# end. None holds a digit, so lines that differ only in digits agree on them.
RESHAPING = tuple(mark.encode() for mark in ("\r", "\n", "MESSAGE", *CUT_FROM_INSIDE, RAY_NOTE))


def stripped_prefix(raw: bytes) -> int | None:
    """How many leading bytes line_segments strips from this physical line, when its one segment
    is the rest of the bytes as they are; None when it may do more.

    The answer holds for every line with the same bytes but for digits: it is ASCII as well, has
    the same length and RESHAPING bytes, and the wrapper regexes treat all digits alike
    (tests/oracles/test_fast_path.py), so they match prefixes of the same length.
    """
    if len(raw) > MAX_LINE or not raw.isascii() or any(mark in raw for mark in RESHAPING):
        return None
    records = glued_records(clean(raw.decode("ascii")))
    return len(raw) - len(records[0]) if len(records) == 1 else None


def read_chunks(path: str) -> Iterator[bytes]:
    """The bytes of a file (gunzipped when it is gzip), or of stdin for '-'."""
    stream = sys.stdin.buffer if path == "-" else open(path, "rb")
    try:
        head = stream.peek(2)[:2] if hasattr(stream, "peek") else b""
        if head == b"\x1f\x8b":
            stream = gzip.GzipFile(fileobj=stream)
        while chunk := stream.read(READ_CHUNK):
            yield chunk
    finally:
        if path != "-":
            stream.close()


def log_files(path: str) -> list[str]:
    """The logs a path names: a folder's files, all of them down its tree but hidden ones, in name
    order (an archive of rotated and compressed logs); any other path as it is."""
    folder = Path(path)
    if path == "-" or not folder.is_dir():
        return [path]
    return [
        str(file)
        for file in sorted(folder.rglob("*"))
        if file.is_file() and not any(part.startswith(".") for part in file.relative_to(folder).parts)
    ]


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else str(Path(path))


def text_lines(text: str) -> Iterator[Line]:
    """Lines of an in-memory string (tests, the streaming engine)."""
    return lines([text.encode("utf-8", errors="surrogateescape")])
