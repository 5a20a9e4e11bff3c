"""The candidate lines of a buffer, read: what batch scanning (scan) and streaming (stream) share.

A literal prefilter finds the candidates; each is parsed (by its learned template when it has one),
and a message its line's end cuts reads on into the lines after it, or waits for them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from advisor.fast.prefilter import Matcher
from advisor.fast.templates import FactTemplates
from advisor.ingest.sources import line_segments
from advisor.parse.continuation import MAX_FOLLOWING, MORE, is_cut, is_frame_code, join, without_cut
from advisor.parse.facts import Fact


def scan_buffer(
    buffer: bytes | bytearray,
    end: int,
    number: int,
    skip: int,
    find_hits: Matcher,
    read: Callable[[bytes | bytearray, int, int, int, bool], int | None],
    final: bool,
    begin: int = 0,
) -> tuple[int, int | None, int]:
    """read() the candidate lines of buffer[begin:end] (the buffer may go on: lines to read on into).

    Returns the newlines counted, where to resume when a line needs lines the buffer does not hold
    (None when all were read; the count then stops there), and the end of the lines read on into.
    """
    hits = find_hits(buffer)
    starts = sorted({buffer.rfind(b"\n", 0, hit) + 1 for hit in hits if begin <= hit < end})
    position = begin
    for start in starts:
        if start < skip:  # read already, as the continuation of the line before
            continue
        number += buffer.count(b"\n", position, start)
        position = start
        stop = buffer.find(b"\n", start, end)
        read_to = read(buffer, start, stop if stop >= 0 else end, number + 1, final)
        if read_to is None:
            return number, start, skip
        skip = max(skip, read_to + 1)
    return number + buffer.count(b"\n", position, end), None, skip


class CandidateReader:
    """The facts of a candidate line in a buffer, a message its end cuts read on into the lines after it."""

    def __init__(self, prefix: re.Pattern[str] | None = None) -> None:
        self.prefix = prefix  # the per-line prefix learned from the log's head (sources.learned_prefix)
        self.templates = FactTemplates(prefix)

    def __call__(
        self, buffer: bytes | bytearray, start: int, stop: int, number: int, final: bool
    ) -> tuple[list[Fact], int] | None:
        """(facts of the line buffer[start:stop], where the lines it read end: `stop` for itself alone),
        or None when it needs lines the buffer does not hold yet (`final`: no more will come)."""
        raw = bytes(memoryview(buffer)[start:stop])  # one copy of the line, whatever the buffer
        parse = self.templates.parse_line
        found = self.templates.parse_raw(raw, number)
        if found is None:
            found = [fact for line in line_segments(number, raw, self.prefix) for fact in parse(line.text, number)]
        if not is_cut(found):
            return found, stop
        segments = [line.text for line in line_segments(number, raw, self.prefix)]
        earlier = [fact for text in segments[:-1] for fact in without_cut(parse(text, number))]
        last = parse(segments[-1], number)
        if not is_cut(last):
            return earlier + last, stop
        # A recursion's thousand frames: one line read after each, not MAX_FOLLOWING (join stops there).
        peek = _following(buffer, stop, final, self.prefix, 1)[0]
        if peek and is_frame_code(last, peek[0]):
            return earlier + without_cut(last), stop
        following, ends, settled = _following(buffer, stop, final, self.prefix)
        joined = join(segments[-1], last, number, following, parse, settled)
        if joined == MORE:
            return None
        if joined is None:
            return earlier + without_cut(last), stop
        return earlier + without_cut(joined[0]), ends[joined[1] - 1]


def _following(
    buffer: bytes | bytearray, stop: int, final: bool, prefix: re.Pattern[str] | None, count: int = MAX_FOLLOWING
) -> tuple[list[str], list[int], bool]:
    """The texts of the (at most `count`) one-segment lines after the line that ends at `stop`, where each
    ends, and whether that settles which lines follow (the data ends, a line of several segments, or enough).

    Lines that unwrap to nothing (a journald record without MESSAGE) are passed over, as
    sources.lines yields nothing for them.
    """
    texts: list[str] = []
    ends: list[int] = []
    start = stop + 1
    while len(texts) < count:
        if start >= len(buffer):
            return texts, ends, final
        end = buffer.find(b"\n", start)
        if end < 0:
            if not final:
                return texts, ends, False
            end = len(buffer)
        segments = list(line_segments(0, bytes(buffer[start:end]), prefix))
        if len(segments) > 1:
            return texts, ends, True
        if segments:
            texts.append(segments[0].text)
            ends.append(end)
        start = end + 1
    return texts, ends, True
