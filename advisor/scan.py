"""Fast path: big buffers, a literal prefilter over raw bytes, and the grammar only on candidate lines."""
from __future__ import annotations

from collections.abc import Iterable

from .facts import Fact
from .prefilter import matcher
from .sources import MAX_LINE, _segments
from .templates import FactTemplates

# Bytes scanned at a time: large enough that per-block overhead vanishes, small enough to bound memory.
BLOCK = 4 << 20


def scan_chunks(chunks: Iterable[bytes], engine: str | None = None) -> list[Fact]:
    """Every fact of every line, in order: the same list as report.parse(sources.lines(chunks)).

    A line with no anchor literal has no anchor after cleaning either, so it can state no fact:
    skipping it is exact. Line numbers come from counting newlines up to each candidate.
    """
    find_hits = matcher(engine)
    parse = FactTemplates().parse_line
    facts: list[Fact] = []
    number = 0  # newlines before the start of `pending`
    pending = b""
    for block in _blocks(chunks):
        pending += block
        cut = pending.rfind(b"\n") + 1
        if cut:
            number = _scan(pending[:cut], number, find_hits, parse, facts)
            pending = pending[cut:]
        if len(pending) > MAX_LINE:  # an endless line: keep what sources.lines keeps of it
            pending = pending[:MAX_LINE]
    if pending:
        _scan(pending, number, find_hits, parse, facts)
    return facts


def _blocks(chunks: Iterable[bytes]) -> Iterable[bytes]:
    """Join small reads into blocks of about BLOCK bytes."""
    parts, size = [], 0
    for chunk in chunks:
        parts.append(chunk)
        size += len(chunk)
        if size >= BLOCK:
            yield b"".join(parts)
            parts, size = [], 0
    if parts:
        yield b"".join(parts)


def _scan(buffer: bytes, number: int, find_hits, parse, facts: list[Fact]) -> int:
    """Parse the candidate lines of a buffer of whole lines; return the newline count after it."""
    starts = sorted({buffer.rfind(b"\n", 0, hit) + 1 for hit in find_hits(buffer)})
    position = 0
    for start in starts:
        number += buffer.count(b"\n", position, start)
        end = buffer.find(b"\n", start)
        end = end if end >= 0 else len(buffer)
        for line in _segments(number + 1, buffer[start:end]):
            facts.extend(parse(line.text, line.number))
        position = start
    return number + buffer.count(b"\n", position)
