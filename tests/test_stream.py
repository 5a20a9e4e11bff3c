"""The streaming engine agrees with batch mode on every real fixture and reports each finding once per run."""
from __future__ import annotations

from collections import Counter

import pytest

from advisor import sources
from advisor.stream import StreamEngine

from conftest import analyze_fixture, corpus_cases, fixture_path


def stream_fixture(name: str) -> tuple[StreamEngine, list, list]:
    """Stream a fixture line by line: (engine, what feed() emitted, what finish() emitted)."""
    engine = StreamEngine(name)
    fed = [f for line in sources.lines(sources.read_chunks(str(fixture_path(name)))) for f in engine.feed(line)]
    return engine, fed, engine.finish()


@pytest.mark.parametrize("case", corpus_cases(), ids=lambda c: c["file"][:3])
def test_final_findings_equal_batch(case):
    name = case["id"]
    engine, _, _ = stream_fixture(name)
    streamed = Counter((s.finding.rule, s.finding.line, s.finding.failure) for s in engine.findings)
    batch = Counter((f.rule, f.line, f.failure) for f in analyze_fixture(name).findings)
    assert streamed == batch


@pytest.mark.parametrize("case", corpus_cases(), ids=lambda c: c["file"][:3])
def test_each_finding_reported_once_per_run(case):
    _, fed, ended = stream_fixture(case["id"])
    reported = Counter((s.run, s.finding.rule) for s in fed + ended if not s.retracted)
    assert all(count == 1 for count in reported.values()), reported


def test_startup_failure_reported_when_its_line_arrives():
    # 088: vLLM 0.32 on CPU refuses a 6 MB KV budget for 4096 tokens; the error line settles it.
    _, fed, _ = stream_fixture("088")
    s101 = next(s for s in fed if s.finding.rule == "S101")
    assert not s101.retracted and s101.finding.failure == "kv_cache_insufficient"


def test_preemption_reported_from_stats_before_the_end():
    _, fed, _ = stream_fixture("091")
    assert "R103" in {s.finding.rule for s in fed if not s.retracted}


def test_restart_starts_a_fresh_run():
    # The same failing launch twice in one stream: two runs, the finding reported in each.
    engine = StreamEngine("twice")
    text = fixture_path("088").read_text()
    fed = [f for _ in range(2) for raw in text.splitlines() for f in engine.feed_raw(raw)] + engine.finish()
    assert sorted(s.run for s in fed if s.finding.rule == "S101") == [0, 1]


def test_fallback_waits_for_the_specific_cause():
    # 088 line 66 says "EngineCore failed to start." before the traceback that ends in the KV error:
    # the generic S299 must not be reported on the way.
    _, fed, ended = stream_fixture("088")
    assert "S299" not in {s.finding.rule for s in fed + ended}


def test_flush_judges_the_run_so_far():
    # 030 ends inside a traceback: the stub that S299 fires on exists only for the run judged whole.
    engine = StreamEngine("030")
    fed = [f for line in sources.lines(sources.read_chunks(str(fixture_path("030")))) for f in engine.feed(line)]
    assert "S299" not in {s.finding.rule for s in fed}
    assert "S299" in {s.finding.rule for s in engine.flush()}
    assert engine.finish() == []
