"""Memory stays bounded however long a stream runs: 5 million lines of a busy server's log, resident size flat."""

from __future__ import annotations

import re
import time
from collections import Counter

import pytest
from conftest import fixture_path

from advisor.stream.engine import StreamEngine

LINES = 5_000_000
FIRST = 1_000_000
STATS_EVERY = 500  # vLLM logs stats every 10 s; a busy server answers hundreds of requests in between
BLOCKS = 50  # distinct blocks of STATS_EVERY lines, cycled: enough variety, little memory for the test itself
SLACK_KIB = 2048
PORT = re.compile(rb":\d+ - ")
GENERATION = re.compile(rb"generation throughput: [\d.]+")


def resident_kib() -> int:
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def serving_blocks() -> tuple[bytes, list[bytes], int]:
    """091's startup, and blocks of its serving lines: one stats line, then uvicorn access lines.

    091 is a real vLLM 0.32 server under load; its 10 stats lines (lines 104-129) run from calm to a
    preemption at line 120 and back (line 126), so each pass through them is one finding and one recovery.
    One access line per block is a 400 answer: a fact (R108, once), parsed every time, judged once.
    """
    log = fixture_path("091").read_bytes().split(b"\n")
    stats = [line for line in log[103:130] if b"Avg prompt throughput" in line]
    access = [line for line in log[103:140] if line.startswith(b"INFO:     127.0.0.1:")]
    blocks = []
    for i in range(BLOCKS):
        # Throughputs and client ports change from line to line in a real log; queues and KV usage
        # stay the fixture's, since they decide the findings.
        lines = [GENERATION.sub(b"generation throughput: %d.%d" % (300 + 7 * i, i % 10), stats[i % len(stats)])]
        lines += [
            PORT.sub(b":%d - " % (32768 + (i * STATS_EVERY + j) % 28000), access[(i + j) % len(access)])
            for j in range(STATS_EVERY - 1)
        ]
        lines[STATS_EVERY // 2] = lines[STATS_EVERY // 2].replace(b'" 200 OK', b'" 400 Bad Request')
        blocks.append(b"\n".join(lines) + b"\n")
    return b"\n".join(log[:103]) + b"\n", blocks, len(stats)


@pytest.mark.exhaustive
def test_resident_memory_does_not_grow_with_lines():
    startup, blocks, stats_cycle = serving_blocks()
    engine = StreamEngine("091")
    events: Counter[tuple[str, str]] = Counter()  # counted, not kept: keeping them would grow memory

    def feed(data: bytes) -> None:
        events.update((r.event, r.finding.rule) for r in engine.feed_bytes(data))

    feed(startup)
    chunk = b"".join(blocks)  # 25,000 lines, about 1.7 MB: the size of a read from a busy log
    per_chunk = chunk.count(b"\n")
    start = time.perf_counter()
    for _ in range(FIRST // per_chunk):
        feed(chunk)
    after_first = resident_kib()
    for _ in range((LINES - FIRST) // per_chunk):
        feed(chunk)
    after_all = resident_kib()
    seconds = time.perf_counter() - start
    print(
        f"{LINES} lines in {seconds:.1f} s, {LINES / seconds:,.0f} lines/s; "
        f"VmRSS {after_first} KiB after {FIRST}, {after_all} KiB after {LINES}"
    )
    assert engine.lines_read == startup.count(b"\n") + LINES
    # Every line was still judged: each pass through 091's stats lines is one preemption and its recovery.
    # The startup's low-concurrency advice gives way to the preemption's, once.
    passes = LINES // STATS_EVERY // stats_cycle
    assert events == {
        ("finding", "H101"): 1,
        ("retraction", "H101"): 1,
        ("finding", "R108"): 1,
        ("finding", "R103"): passes,
        ("recovery", "R103"): passes,
    }
    assert after_all - after_first < SLACK_KIB
