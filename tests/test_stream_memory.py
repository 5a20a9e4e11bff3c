"""Memory stays bounded however long a stream runs: resident size after many lines equals that after a fifth."""
from __future__ import annotations

import itertools
import time

from conftest import fixture_path

from advisor.stream import StreamEngine

# The engine reads about 8,000 lines/s of this serving traffic (stats and request lines, many carrying
# facts) on the 2-core dev machine: 5 million lines would take over 10 minutes, so the test feeds what fits
# in about 30 s. Growth per stored fact would still show: 190,000 more facts is tens of megabytes.
LINES = 240_000
SLACK_KIB = 2048


def resident_kib() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def test_resident_memory_does_not_grow_with_lines():
    # 091: a real vLLM 0.32 server under load; lines 101-185 are serving (stats lines, requests, preemptions).
    log = fixture_path("091").read_bytes().split(b"\n")
    engine = StreamEngine("091")
    for raw in log[:100]:  # the startup, once
        engine.feed_raw(raw)
    serving = itertools.cycle(log[100:185])
    start = time.perf_counter()
    for raw in itertools.islice(serving, LINES // 5):
        engine.feed_raw(raw)
    after_fifth = resident_kib()
    for raw in itertools.islice(serving, LINES - LINES // 5):
        engine.feed_raw(raw)
    after_all = resident_kib()
    rate = LINES / (time.perf_counter() - start)
    print(f"{LINES} lines at {rate:.0f} lines/s; VmRSS {after_fifth} KiB after {LINES // 5}, {after_all} KiB after {LINES}")
    assert engine.lines_read == 100 + LINES
    assert after_all - after_fifth < SLACK_KIB
