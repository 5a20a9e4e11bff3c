"""The streaming engine agrees with batch mode on every real fixture and reports each finding once per run."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import CORPUS, analyze_fixture, corpus_cases, fixture_path, tiered

from advisor.stream.engine import StreamEngine

CASES = tiered(corpus_cases(), log=lambda case: CORPUS / Path(case["file"]).name)


def physical_lines(name: str) -> list[bytes]:
    data = fixture_path(name).read_bytes()
    return data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n")


def stream_fixture(name: str) -> tuple[StreamEngine, list, list]:
    """Stream a fixture line by line: (engine, what feed_raw() emitted, what finish() emitted)."""
    engine = StreamEngine(name)
    fed = [f for raw in physical_lines(name) for f in engine.feed_raw(raw)]
    return engine, fed, engine.finish()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["file"][:3])
def test_final_findings_equal_batch(case):
    name = case["id"]
    engine, _, _ = stream_fixture(name)
    streamed = Counter((s.finding.rule, s.finding.line, s.finding.failure) for s in engine.findings)
    batch = Counter((f.rule, f.line, f.failure) for f in analyze_fixture(name).findings)
    assert streamed == batch


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["file"][:3])
def test_bytes_cut_anywhere_give_the_batch_findings_and_line_numbers(case):
    # What follow feeds: reads of any size, lines split across them; only prefiltered lines are parsed.
    name, data = case["id"], fixture_path(case["id"]).read_bytes()
    engine = StreamEngine(name)
    for start in range(0, len(data), 997):
        engine.feed_bytes(data[start : start + 997])
    engine.finish()
    streamed = Counter((s.finding.rule, s.finding.line, s.finding.failure) for s in engine.findings)
    batch = Counter((f.rule, f.line, f.failure) for f in analyze_fixture(name).findings)
    assert streamed == batch
    assert engine.lines_read == len(data.split(b"\n")) - data.endswith(b"\n")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["file"][:3])
def test_each_finding_reported_once_per_run(case):
    # Once per run, or once more after each recovery: per run and rule, findings and recoveries alternate.
    _, fed, ended = stream_fixture(case["id"])
    history: dict[tuple[int, str], str] = {}
    for s in fed + ended:
        if not s.retracted:
            history[s.run, s.finding.rule] = history.get((s.run, s.finding.rule), "") + s.event[0]
    assert all(h.replace("fr", "") in ("", "f") for h in history.values()), history


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["file"][:3])
def test_what_a_reader_of_the_stream_is_left_with_is_the_batch_findings(case):
    # A consumer keeps each finding until its retraction: at the end it must hold batch's findings,
    # none that a later (logged) finding overrode.
    _, fed, ended = stream_fixture(case["id"])
    standing: dict[tuple[int, str], tuple] = {}
    for s in fed + ended:
        key = (s.run, s.finding.rule)
        if s.event == "finding":
            standing[key] = (s.finding.rule, s.finding.line, s.finding.failure)
        elif s.event == "retraction":
            standing.pop(key, None)
    batch = Counter((f.rule, f.line, f.failure) for f in analyze_fixture(case["id"]).findings)
    assert Counter(standing.values()) == batch


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
    fed = [f for raw in physical_lines("030") for f in engine.feed_raw(raw)]
    assert "S299" not in {s.finding.rule for s in fed}
    assert "S299" in {s.finding.rule for s in engine.flush()}
    assert engine.finish() == []


def test_recovery_when_the_stats_show_the_cache_free_again():
    # 091: preemption inferred at line 120 (95.5% KV, 4 waiting); line 126 shows 43.2% and 0 waiting.
    _, fed, ended = stream_fixture("091")
    events = [(s.event, s.finding.rule, s.finding.line) for s in fed + ended if s.finding.rule == "R103"]
    assert events == [("finding", "R103", 120), ("recovery", "R103", 126)]
    recovery = next(s for s in fed if s.event == "recovery")
    assert recovery.finding.severity == "info" and not recovery.finding.remediations
    assert "43.2%" in recovery.finding.message and "line 120" in recovery.finding.message
    assert recovery.to_dict()["event"] == "recovery"


def test_no_recovery_while_requests_wait():
    # 091 line 108: KV usage fell to 61.4% but 4 requests still wait: not over yet.
    lines = fixture_path("091").read_bytes().split(b"\n")
    engine = StreamEngine("091")
    fed = [f for raw in [*lines[:120], lines[107]] for f in engine.feed_raw(raw)]
    assert [s.event for s in fed if s.finding.rule == "R103"] == ["finding"]


def test_recovery_of_another_engine_clears_nothing():
    # Data parallel: engine 001 idle while engine 000, which was preempting, has not been seen to recover.
    lines = fixture_path("091").read_bytes().split(b"\n")
    other_engine = lines[125].replace(b"Engine 000:", b"Engine 001:")
    engine = StreamEngine("091")
    fed = [f for raw in [*lines[:120], other_engine, lines[125]] for f in engine.feed_raw(raw)]
    assert [(s.event, s.finding.line) for s in fed if s.finding.rule == "R103"] == [("finding", 120), ("recovery", 122)]


def test_degradation_after_recovery_is_reported_again():
    lines = fixture_path("091").read_bytes().split(b"\n")
    engine = StreamEngine("091")
    fed = [f for raw in lines[:126] + lines[116:120] for f in engine.feed_raw(raw)]
    assert [s.event for s in fed if s.finding.rule == "R103"] == ["finding", "recovery", "finding"]
