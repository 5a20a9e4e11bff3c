"""Fast path: big buffers, a literal prefilter over raw bytes, and the grammar only on candidate lines."""
from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator

from . import background, sources
from .facts import Fact
from .limits import TracebackBound
from .grammar import anchor_regex, envelope_parser, message_parser
from .prefilter import matcher
from .sources import MAX_LINE, line_segments
from .templates import FactTemplates, PackedFact

# Bytes scanned at a time: large enough that per-block overhead vanishes, small enough to bound memory.
BLOCK = 4 << 20
# A plain file is cut into parts of at least this size, one per usable core, each scanned by a
# process of its own: below it, starting a process costs more than it saves.
PART_MIN = 16 << 20
# The first part, scanned by this process, is this much larger than the others (0.12: 12%): the
# facts of the others are pickled, sent and unpickled before they join, which takes that long.
FIRST_PART_EXTRA = 0.12
GZIP_MAGIC = b"\x1f\x8b"


def scan_file(path: str, engine: str | None = None) -> list[Fact]:
    """scan_chunks of a file's bytes (or stdin's for '-').

    A big plain file is cut at line starts into parts scanned at once: the first by this process,
    the others by forked ones, whose line numbers count from their part's start until the
    newlines of the parts before are known.
    """
    size = _plain_file_size(path)
    parts = min(_usable_cores(), size // PART_MIN)
    if parts < 2 or not background.can_fork():
        return scan_chunks(sources.read_chunks(path), engine)
    starts = [0]
    for index in range(1, parts):  # a line longer than a part leaves the parts after it empty
        cut = int(size * (index + FIRST_PART_EXTRA) / (parts + FIRST_PART_EXTRA))
        starts.append(max(starts[-1], _next_line_start(path, cut)))
    # Built once here, before the forks, rather than once in every process.
    matcher(engine), message_parser(), envelope_parser(), anchor_regex()
    later_parts = [background.start(_scan_part, path, start, end, engine)
                   for start, end in zip(starts[1:], starts[2:] + [None])]
    try:
        facts, lines = _scan_lines(_read(path, 0, starts[1]), engine)
        for part in later_parts:
            part_facts, part_lines = part.result()
            facts += _moved_down(part_facts, lines)
            lines += part_lines
    finally:
        for part in later_parts:
            part.cancel()
    return facts


def _usable_cores() -> int:
    # The cores this process may run on (a container or taskset may allow fewer than the machine has).
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _scan_part(path: str, start: int, end: int | None, engine: str | None) -> tuple[list[Fact], int]:
    return _scan_lines(_read(path, start, end), engine)


def _moved_down(facts: list[Fact], lines: int) -> list[Fact]:
    """A later part's facts numbered from the file's start. Packed facts (nearly all) are moved in
    place, as nothing else holds them yet: a copy would double a big part's memory for a moment."""
    for index, fact in enumerate(facts):
        if isinstance(fact, PackedFact):
            fact.line += lines
        else:
            facts[index] = fact.model_copy(update={"line": fact.line + lines})
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
            size = stream.readinto(view[:BLOCK if end is None else min(BLOCK, end - position)])
            if not size:
                return
            position += size
            yield block if size == BLOCK else bytes(view[:size])


def scan_chunks(chunks: Iterable[bytes], engine: str | None = None) -> list[Fact]:
    """Every fact of every line, in order: the same list as report.parse(sources.lines(chunks))."""
    return _scan_lines(chunks, engine)[0]


def _scan_lines(chunks: Iterable[bytes], engine: str | None) -> tuple[list[Fact], int]:
    """The facts of scan_chunks and the number of newlines in the chunks.

    A line with no anchor literal has no anchor after cleaning either, so it can state no fact:
    skipping it is exact. Line numbers come from counting newlines up to each candidate.
    """
    find_hits, templates, bound = matcher(engine), FactTemplates(), TracebackBound()
    facts: list[Fact] = []

    def read(raw: bytes, number: int) -> None:
        """Add the facts of one candidate line: by a raw recipe when its shape has one."""
        found = templates.parse_raw(raw, number)
        if found is None:
            found = [fact for line in line_segments(number, raw) for fact in templates.parse_line(line.text, number)]
        bound.extend(facts, found)

    number = 0  # newlines before the start of `pending`
    pending = b""
    for block in _blocks(chunks):
        first = block.find(b"\n") + 1
        if not first:  # no line ends in this block: it all belongs to the carried-over line
            pending = (pending + block)[:MAX_LINE]  # an endless line: keep what sources.lines keeps
            continue
        # The carried-over line is finished by the block's first newline: scan it on its own, then
        # the block's whole lines in place, so the big block is never copied.
        number = _scan(pending + block[:first], 0, None, number, find_hits, read)
        last = block.rfind(b"\n") + 1
        number = _scan(block, first, last, number, find_hits, read)
        pending = block[last:last + MAX_LINE]
    if pending:
        _scan(pending, 0, None, number, find_hits, read)
    facts.extend(bound.finish())
    return facts, number


def _blocks(chunks: Iterable[bytes]) -> Iterable[bytes]:
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


def _scan(buffer: bytes, begin: int, end: int | None, number: int, find_hits, read) -> int:
    """read() the candidate lines of buffer[begin:end], whole lines; return the newline count after them."""
    end = len(buffer) if end is None else end
    hits = find_hits(buffer)
    starts = sorted({buffer.rfind(b"\n", 0, hit) + 1 for hit in hits if begin <= hit < end})
    position, view = begin, memoryview(buffer)  # a line is copied once, from the view, into bytes
    for start in starts:
        number += buffer.count(b"\n", position, start)
        stop = buffer.find(b"\n", start, end)
        read(bytes(view[start:stop if stop >= 0 else end]), number + 1)
        position = start
    return number + buffer.count(b"\n", position, end)
