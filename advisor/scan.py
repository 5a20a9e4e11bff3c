"""Fast path: big buffers, a literal prefilter over raw bytes, and the grammar only on candidate lines."""
from __future__ import annotations

import multiprocessing
import os
import stat
from collections.abc import Iterable, Iterator

from . import sources
from .facts import Fact
from .prefilter import matcher
from .sources import MAX_LINE, _segments
from .templates import FactTemplates, PackedFact

# Bytes scanned at a time: large enough that per-block overhead vanishes, small enough to bound memory.
BLOCK = 4 << 20
# From this size on a file is scanned by two processes, one per half: below it, starting the
# second process costs more than it saves.
SPLIT_AT = 32 << 20
GZIP_MAGIC = b"\x1f\x8b"


def scan_file(path: str, engine: str | None = None) -> list[Fact]:
    """scan_chunks of a file's bytes (or stdin's for '-'). A big plain file is scanned in two halves
    at once, the second by a forked process; its line numbers count from the middle until the
    first half's newlines are known."""
    size = _plain_file_size(path)
    if size < SPLIT_AT or "fork" not in multiprocessing.get_all_start_methods():
        return scan_chunks(sources.read_chunks(path), engine)
    middle = _next_line_start(path, size // 2)
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_scan_second_half, args=(path, middle, engine, sender), daemon=True)
    child.start()
    sender.close()
    try:
        first, lines = _scan_lines(_read(path, 0, middle), engine)
        second = receiver.recv()
    except EOFError:  # the child died without a word (killed): say so, not "cannot read"
        raise RuntimeError(f"the process scanning the second half of {path} died") from None
    finally:
        child.join()
    if isinstance(second, BaseException):
        raise second
    return first + [_moved_down(fact, lines) for fact in second]


def _scan_second_half(path: str, middle: int, engine: str | None, sender) -> None:
    try:
        result = scan_chunks(_read(path, middle, None), engine)
    except BaseException as error:  # the parent raises it, as if it had scanned this half itself
        result = error
    sender.send(result)


def _moved_down(fact: Fact | PackedFact, lines: int) -> Fact | PackedFact:
    if isinstance(fact, PackedFact):
        return PackedFact(fact.template, fact.names, fact.line + lines, fact.numbers, fact.process)
    return fact.model_copy(update={"line": fact.line + lines})


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
    find_hits = matcher(engine)
    parse = FactTemplates().parse_line
    facts: list[Fact] = []
    number = 0  # newlines before the start of `pending`
    pending = b""
    for block in _blocks(chunks):
        first = block.find(b"\n") + 1
        if not first:  # no line ends in this block: it all belongs to the carried-over line
            pending = (pending + block)[:MAX_LINE]  # an endless line: keep what sources.lines keeps
            continue
        # The carried-over line is finished by the block's first newline: scan it on its own, then
        # the block's whole lines in place, so the big block is never copied.
        number = _scan(pending + block[:first], 0, None, number, find_hits, parse, facts)
        last = block.rfind(b"\n") + 1
        number = _scan(block, first, last, number, find_hits, parse, facts)
        pending = block[last:last + MAX_LINE]
    if pending:
        _scan(pending, 0, None, number, find_hits, parse, facts)
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


def _scan(buffer: bytes, begin: int, end: int | None, number: int, find_hits, parse, facts: list[Fact]) -> int:
    """Parse the candidate lines of buffer[begin:end], whole lines; return the newline count after them."""
    end = len(buffer) if end is None else end
    hits = find_hits(buffer)
    starts = sorted({buffer.rfind(b"\n", 0, hit) + 1 for hit in hits if begin <= hit < end})
    position = begin
    for start in starts:
        number += buffer.count(b"\n", position, start)
        stop = buffer.find(b"\n", start, end)
        stop = stop if stop >= 0 else end
        for line in _segments(number + 1, buffer[start:stop]):
            facts.extend(parse(line.text, line.number))
        position = start
    return number + buffer.count(b"\n", position, end)
