"""Fast path: big buffers, a literal prefilter over raw bytes, and the grammar only on candidate lines."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator

from advisor.fast import background
from advisor.fast.candidates import CandidateReader, scan_buffer
from advisor.fast.prefilter import matcher
from advisor.ingest import prefixes, sources
from advisor.ingest.sources import MAX_LINE
from advisor.parse import records
from advisor.parse.anchors import anchor_of_word, anchor_word_regex
from advisor.parse.continuation import MAX_FOLLOWING
from advisor.parse.facts import Fact
from advisor.parse.limits import TracebackBound
from advisor.parse.parsers import envelope_parser, message_parser

# Bytes scanned at a time: large enough that per-block overhead vanishes, small enough to bound memory.
BLOCK = 4 << 20
# A plain file is cut into parts of at least this size, one per usable core, each scanned by a
# process of its own: below it, starting a process costs more than it saves.
PART_MIN = 16 << 20
# The first part, scanned by this process, is this much larger than the others (0.12: 12%): the
# facts of the others are pickled, sent and unpickled before they join, which takes that long.
FIRST_PART_EXTRA = 0.12
GZIP_MAGIC = b"\x1f\x8b"


def scan_file(path: str, engine: str | None = None, parts: int | None = None) -> list[Fact]:
    """scan_chunks of a file's bytes (or stdin's for '-').

    A big plain file is cut at line starts into parts scanned at once: the first by this process,
    the others by forked ones, whose line numbers count from their part's start until the
    newlines of the parts before are known. `parts` caps their number (default: the usable cores).
    """
    size = _plain_file_size(path)
    parts = min(parts or usable_cores(), size // PART_MIN)
    if parts < 2 or not background.can_fork():
        return scan_chunks(sources.read_chunks(path), engine)
    prefix = sources.learned_prefix(_read_head(path))
    starts = [0]
    for index in range(1, parts):  # a line longer than a part leaves the parts after it empty
        cut = int(size * (index + FIRST_PART_EXTRA) / (parts + FIRST_PART_EXTRA))
        starts.append(max(starts[-1], _next_line_start(path, cut)))
    # Built once here, before the forks, rather than once in every process.
    matcher(engine), message_parser(), envelope_parser(), anchor_word_regex(), anchor_of_word()
    later_parts = [
        background.start(_scan_part, path, start, end, engine, prefix)
        for start, end in zip(starts[1:], [*starts[2:], None], strict=True)
    ]
    try:
        facts, lines, consumed = _scan_lines(_read(path, 0, starts[1]), engine, prefix, _lines_at(path, starts[1]))
        for part in later_parts:
            part_facts, part_lines, part_consumed = part.result()
            # The first lines of a part that the part before read on into are not lines of their own.
            facts += _moved_down([f for f in part_facts if f.line > consumed], lines)
            lines, consumed = lines + part_lines, part_consumed
    finally:
        for part in later_parts:
            part.cancel()
    return records.with_head(facts, sources.lines(sources.read_chunks(path)))


def usable_cores() -> int:
    # The cores this process may run on (a container or taskset may allow fewer than the machine has).
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _scan_part(
    path: str, start: int, end: int | None, engine: str | None, prefix: re.Pattern[str] | None
) -> tuple[list[Fact], int, int]:
    return _scan_lines(_read(path, start, end), engine, prefix, _lines_at(path, end))


def _read_head(path: str) -> bytes:
    """The head a per-line prefix is learned from, as sources.lines reads it."""
    with open(path, "rb") as stream:
        return stream.read(prefixes.HEAD_BYTES)


def _lines_at(path: str, offset: int | None) -> bytes:
    """The lines a cut message at the end of a part may read on into: the next part's first ones."""
    if offset is None:
        return b""
    with open(path, "rb") as stream:
        stream.seek(offset)
        data = stream.read((MAX_FOLLOWING + 1) * MAX_LINE)
    return data[: _after_lines(data, 0, MAX_FOLLOWING)]


def _moved_down(facts: list[Fact], lines: int) -> list[Fact]:
    """A later part's facts numbered from the file's start, moved in place, as nothing else holds them
    yet: a copy would double a big part's memory for a moment."""
    for fact in facts:
        fact.line += lines
    return facts


def _plain_file_size(path: str) -> int:
    """The size of a regular, uncompressed file; 0 for stdin, pipes, devices, gzip and unreadable paths."""
    try:
        if path == "-" or not stat.S_ISREG(os.stat(path).st_mode):
            return 0
        with open(path, "rb") as stream:
            return 0 if stream.read(2) == GZIP_MAGIC else os.fstat(stream.fileno()).st_size
    except OSError:
        return 0  # the one-process path reports it


def _next_line_start(path: str, offset: int) -> int:
    """The offset just after the first newline at or after `offset` (the file's end if none)."""
    with open(path, "rb") as stream:
        stream.seek(offset)
        while block := stream.read(1 << 16):
            newline = block.find(b"\n")
            if newline >= 0:
                return offset + newline + 1
            offset += len(block)
    return offset


def _read(path: str, start: int, end: int | None) -> Iterator[bytes | bytearray]:
    """The bytes from `start` to `end` (the file's end for None), a BLOCK at a time, read into one
    reused buffer: a fresh 4 MB buffer per read costs more in page faults than the read itself.
    A full block is that buffer, so a caller keeps nothing of it past the next block."""
    block = bytearray(BLOCK)
    view = memoryview(block)
    with open(path, "rb") as stream:
        stream.seek(start)
        position = start
        while end is None or position < end:
            size = stream.readinto(view[: BLOCK if end is None else min(BLOCK, end - position)])
            if not size:
                return
            position += size
            yield block if size == BLOCK else bytes(view[:size])


def scan_chunks(chunks: Iterable[bytes], engine: str | None = None) -> list[Fact]:
    """Every fact of every line, in order: the same list as report.parse(sources.lines(chunks))."""
    head: list[bytes] = []
    read, prefix = sources.peeked(chunks)
    found = _scan_lines(records.keeping_head(read, head), engine, prefix)[0]
    return records.with_head(found, sources.lines(head))


def _scan_lines(
    chunks: Iterable[bytes | bytearray], engine: str | None, prefix: re.Pattern[str] | None, lookahead: bytes = b""
) -> tuple[list[Fact], int, int]:
    """The facts of scan_chunks, the number of newlines in the chunks, and how many lines of
    `lookahead` (the lines after the chunks, not scanned) a cut message at the end read on into.

    A line with no anchor literal has no anchor after cleaning either, so it can state no fact:
    skipping it is exact. Line numbers come from counting newlines up to each candidate. A candidate
    whose message is cut by its line's end reads on into the lines after it (advisor.parse.continuation),
    so a block's last lines wait for the next block when they may be needed.
    """
    find_hits, reader, bound = matcher(engine), CandidateReader(prefix), TracebackBound()
    facts: list[Fact] = []

    def read(buffer: bytes | bytearray, start: int, stop: int, number: int, final: bool) -> int | None:
        read = reader(buffer, start, stop, number, final)
        if read is None:
            return None
        bound.extend(facts, read[0])
        return read[1]

    number = 0  # newlines before the start of `pending`
    # Lines not scanned yet: a line the last block did not finish, or a block's last lines.
    pending: bytes | bytearray = b""
    skip = 0  # offset in `pending` before which lines were read on into by a line before them
    for block in _blocks(chunks):
        first = block.find(b"\n") + 1
        if not first:  # no line ends in this block: it all belongs to the carried-over line
            pending = _capped(pending + block)
            continue
        # The carried-over lines end at the block's first newline: scan them with the next lines of
        # the block to read on into, then the block's whole lines in place, so the big block is never copied.
        ahead = _after_lines(block, first, MAX_FOLLOWING)
        head = pending + block[:ahead]
        number, resume, skip = scan_buffer(head, len(pending) + first, number, skip, find_hits, read, False)
        if resume is not None:
            pending, skip = _capped(head[resume:] + block[ahead:]), 0
            continue
        skip = max(0, skip - len(pending))
        last = block.rfind(b"\n") + 1
        number, resume, skip = scan_buffer(block, last, number, skip, find_hits, read, False, first)
        cut = last if resume is None else resume
        pending, skip = _capped(block[cut:]), max(0, skip - cut)
    consumed = 0
    if pending:
        number, _, skip = scan_buffer(pending + lookahead, len(pending), number, skip, find_hits, read, True)
        consumed = lookahead[: max(0, skip - len(pending))].count(b"\n")
    facts.extend(bound.finish())
    return facts, number, consumed


def _capped(data: bytes | bytearray) -> bytes | bytearray:
    """Whole lines, and of the unfinished last line what sources.lines keeps: an endless line is cut."""
    cut = data.rfind(b"\n") + 1
    return data[:cut] + data[cut : cut + MAX_LINE]


def _after_lines(buffer: bytes | bytearray, start: int, count: int) -> int:
    """The offset just after the `count`-th newline from `start` (the buffer's end if it has fewer)."""
    for _ in range(count):
        found = buffer.find(b"\n", start)
        if found < 0:
            return len(buffer)
        start = found + 1
    return start


def _blocks(chunks: Iterable[bytes | bytearray]) -> Iterable[bytes | bytearray]:
    """Join small reads into blocks of about BLOCK bytes (a read of BLOCK bytes passes as it is)."""
    parts, size = [], 0
    for chunk in chunks:
        parts.append(chunk)
        size += len(chunk)
        if size >= BLOCK:
            yield parts[0] if len(parts) == 1 else b"".join(parts)
            parts, size = [], 0
    if parts:
        yield b"".join(parts)
