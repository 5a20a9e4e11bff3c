"""Sources: read bytes (file, stdin, .gz), split them into numbered lines, and unwrap each one."""

from __future__ import annotations

import gzip
import itertools
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from advisor.ingest import prefixes
from advisor.ingest.unwrap import CARET_CR, CUT_FROM_INSIDE, RAY_NOTE, clean, glued_records, journal_message, unwrapped

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
    read, prefix = peeked(chunks)
    number, pending = 0, b""
    for chunk in read:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for raw in complete:
            number += 1
            yield from line_segments(number, raw, prefix)
        if len(pending) > MAX_LINE:  # never buffer an endless line
            pending = pending[:MAX_LINE]
    if pending:
        yield from line_segments(number + 1, pending, prefix)


def peeked(chunks: Iterable[bytes | bytearray]) -> tuple[Iterator[bytes | bytearray], re.Pattern[str] | None]:
    """The same chunks, and the prefix learned from their head (prefixes.HEAD_BYTES at most)."""
    chunks = iter(chunks)
    head: list[bytes] = []
    size = 0
    for chunk in chunks:
        head.append(bytes(chunk))  # a reader may reuse its buffer for the next chunk
        size += len(chunk)
        if size >= prefixes.HEAD_BYTES:
            break
    return itertools.chain(head, chunks), learned_prefix(b"".join(head))


def learned_prefix(data: bytes) -> re.Pattern[str] | None:
    """The per-line prefix learned from the head of a log (its first prefixes.HEAD_LINES lines)."""
    head = data[: prefixes.HEAD_BYTES].split(b"\n", prefixes.HEAD_LINES)[: prefixes.HEAD_LINES]
    return prefixes.learn(unwrapped(segment) for raw in head for segment in _segments(raw))


def line_segments(number: int, raw: bytes, prefix: re.Pattern[str] | None = None) -> Iterator[Line]:
    """The cleaned text of one physical line (without its LF), in as many segments as it has breaks."""
    for segment in _segments(raw):
        for record in glued_records(clean(segment, prefix)):
            yield Line(number, record)


def _segments(raw: bytes) -> list[str]:
    """The decoded segments of one physical line: its journald MESSAGE, split at CRs and LFs."""
    text = raw[:MAX_LINE].decode("utf-8", errors="replace").rstrip("\r")
    message = journal_message(text) if "MESSAGE" in text else text
    if message is None:
        return []
    return BREAKS.split(message) if ("\r" in message or "\n" in message) else [message]


# What makes line_segments do more to a line than decode it and strip wrappers from its start: a CR
# or LF splits it, MESSAGE may mean a journald record, what unwrap cuts from inside a line or off its
# end. None holds a digit, so lines that differ only in digits agree on them.
RESHAPING = tuple(mark.encode() for mark in ("\r", "\n", "MESSAGE", *CUT_FROM_INSIDE, RAY_NOTE, CARET_CR))


def stripped_prefix(raw: bytes, prefix: re.Pattern[str] | None = None) -> int | None:
    """How many leading bytes line_segments strips from this physical line, when its one segment
    is the rest of the bytes as they are; None when it may do more.

    The answer holds for every line with the same bytes but for digits: it is ASCII as well, has
    the same length and RESHAPING bytes, and the wrapper regexes treat all digits alike
    (tests/oracles/test_fast_path.py), so they match prefixes of the same length.
    """
    if len(raw) > MAX_LINE or not raw.isascii() or any(mark in raw for mark in RESHAPING):
        return None
    records = glued_records(clean(raw.decode("ascii"), prefix))
    return len(raw) - len(records[0]) if len(records) == 1 else None


def read_chunks(path: str) -> Iterator[bytes]:
    """The bytes of a file (gunzipped when it is gzip), or of stdin for '-'."""
    stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115  (closed in the finally below)
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
