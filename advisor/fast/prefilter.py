"""Literal prefilter: the words every anchor of the grammar contains, found in raw bytes by a multi-literal matcher."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import cast

from advisor.ingest.unwrap import CUT_FROM_INSIDE, JOURNAL_KEY
from advisor.parse.anchors import anchor_words
from advisor.parse.envelope import CRITICAL, ERROR

# A line holding what unwrap cuts from inside lines ("CUDA \x1b[1mout of memory") or a journald
# record's key is always a candidate: its anchors may not be in its raw bytes; so is an error-level record.
ALWAYS_CANDIDATES = (*CUT_FROM_INSIDE, JOURNAL_KEY, CRITICAL, ERROR)


def anchor_literals() -> tuple[bytes, ...]:
    """The literals that find every line on which the grammar can state a fact."""
    return tuple(dict.fromkeys(word.encode() for word in (*anchor_words(), *ALWAYS_CANDIDATES)))


# A matcher takes a buffer (a full block is the reader's reused bytearray) and returns the offsets of every
# literal hit (any order, repeats allowed).
Matcher = Callable[[bytes | bytearray], list[int]]


def find_matcher(literals: tuple[bytes, ...]) -> Matcher:
    """Portable engine: one C-speed bytes.find pass per literal, skipping to the next line after a hit."""

    def offsets(buffer: bytes | bytearray) -> list[int]:
        hits = []
        for literal in literals:
            find, position = buffer.find, 0
            while (hit := find(literal, position)) >= 0:
                hits.append(hit)
                end = buffer.find(b"\n", hit)
                position = end + 1 if end >= 0 else len(buffer)
        return hits

    return offsets


def hyperscan_matcher(literals: tuple[bytes, ...]) -> Matcher:
    """Hyperscan engine: all literals in one pass over the buffer (Teddy/FDR SIMD literal matching)."""
    import hyperscan

    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=[_hyperscan_literal(literal) for literal in literals],
        ids=list(range(len(literals))),
        elements=len(literals),
    )
    scratch = hyperscan.Scratch(database)

    def offsets(buffer: bytes | bytearray) -> list[int]:
        hits: list[int] = []

        def on_match(_id: int, _start: int, end: int, _flags: int, _context: object) -> None:
            hits.append(end - 1)  # any offset inside the line will do

        # The stub says str or bytes; the C code scans any buffer, the reader's bytearray too.
        database.scan(cast(bytes, buffer), match_event_handler=on_match, scratch=scratch)
        return hits

    return offsets


def ahocorasick_matcher(literals: tuple[bytes, ...]) -> Matcher:
    """ahocorasick-rs engine: one Aho-Corasick pass in Rust. Non-overlapping matches are enough:
    a literal hidden by an overlapping match shares its line, as no literal holds a newline."""
    from ahocorasick_rs import BytesAhoCorasick

    automaton = BytesAhoCorasick(list(literals))

    def offsets(buffer: bytes | bytearray) -> list[int]:
        return [start for _, start, _ in automaton.find_matches_as_indexes(buffer)]

    return offsets


def _hyperscan_literal(literal: bytes) -> bytes:
    # Hyperscan takes regular expressions: escape every byte as \xHH so the literal stays literal.
    return b"".join(b"\\x%02x" % byte for byte in literal)


# Fastest first; the first whose module imports is the default. "find" needs nothing.
ENGINES: dict[str, Callable[[tuple[bytes, ...]], Matcher]] = {
    "hyperscan": hyperscan_matcher,
    "ahocorasick": ahocorasick_matcher,
    "find": find_matcher,
}


@cache
def matcher(engine: str | None = None) -> Matcher:
    """The named engine, or the fastest one that imports here, for the literals of two bytes or more;
    single bytes (ESC, NUL) are found by bytes.find, at memchr speed."""
    literals = anchor_literals()
    longer = tuple(literal for literal in literals if len(literal) > 1)
    builds = [ENGINES[engine]] if engine is not None else list(ENGINES.values())
    for build in builds:
        try:
            return _with_bytes(build(longer), [literal for literal in literals if len(literal) == 1])
        except ImportError:
            continue
    raise AssertionError("the find engine needs no import")


def _with_bytes(find_longer: Matcher, single_bytes: list[bytes]) -> Matcher:
    # A one-byte literal makes the multi-literal engines several times slower over the whole buffer,
    # and these bytes (ESC, NUL) are rare: memchr finds that a block holds none almost for free.
    # In a coloured log they are on every line: one hit per line is enough.
    def offsets(buffer: bytes | bytearray) -> list[int]:
        hits = find_longer(buffer)
        for byte in single_bytes:
            hit = buffer.find(byte)
            while hit >= 0:
                hits.append(hit)
                end = buffer.find(b"\n", hit)
                if end < 0:
                    break
                hit = buffer.find(byte, end + 1)
        return hits

    return offsets
