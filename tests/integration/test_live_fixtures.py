"""Logs captured from live vLLM runs (fixtures/live for 0.32.0, fixtures/live/vX.Y.Z for other
releases): each classified as its scenario says."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, analyze_fixture

from advisor.ingest import sources
from advisor.report.build import analyze

LIVE = FIXTURES / "live"
# One capture per side JSON; the name is its path under fixtures/live without the suffix.
CAPTURES = sorted(str(p.relative_to(LIVE).with_suffix("")) for p in LIVE.glob("**/*.json"))
RELEASES = sorted(p.name for p in LIVE.iterdir() if p.is_dir())
# Captures the advisor misclassified at first sight (the same logs are corpus cases in
# tests/snapshots/test_corpus.py KNOWN_WRONG). Strict: a fix that classifies one right must drop it here.
KNOWN_WRONG: dict[str, str] = {}


def analyze_capture(name: str):
    # By exact path: a glob on the name would mistake healthy.log for healthy-cache-full.log.
    path = LIVE / f"{name}.log"
    return analyze(sources.lines(sources.read_chunks(str(path))), path.name, None)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_WRONG[n])) if n in KNOWN_WRONG else n
        for n in CAPTURES
    ],
)
def test_live_scenario_is_classified_as_captured(name):
    label = json.loads((LIVE / f"{name}.json").read_text())["label"]
    verdict = analyze_capture(name).verdict
    # As in the corpus, a label may accept more than one failure where the log alone cannot decide.
    assert (verdict.phase, verdict.failure in label.get("accept", [label["failure"]])) == (label["phase"], True)


@pytest.mark.parametrize("name", CAPTURES)
def test_capture_records_its_ground_truth(name):
    record = json.loads((LIVE / f"{name}.json").read_text())
    assert record["vllm_version"] and record["argv"] and "confirmed" in record
    if name in ORIGINAL_0320:
        return  # captured before the /metrics dump was kept beside each log
    served = record["startup"]["state"] == "ready"
    metrics = LIVE / f"{name}.metrics.txt"
    # A server that came up was scraped right before it stopped; a failed startup has nothing.
    assert metrics.exists() == served
    if served:
        dump = metrics.read_text()
        assert "vllm:num_preemptions_total" in dump
        assert record["preemptions"] is not None


ORIGINAL_0320 = {
    "kv-shortfall",
    "healthy",
    "preemption",
    "preemption-snapshot",
    "max-len-exceeds-model",
    "tp-invalid",
    "port-in-use",
    "request-too-long",
}


def test_all_seven_scenarios_are_present():
    assert set(CAPTURES) >= ORIGINAL_0320 - {"preemption-snapshot"}


def test_new_scenarios_are_present_for_0320():
    assert {"healthy-cache-full", "sigterm-shutdown"} <= set(CAPTURES)


def test_healthy_cache_full_preempted_nothing_while_nearly_full():
    record = json.loads((LIVE / "healthy-cache-full.json").read_text())
    assert record["confirmed"] and record["preemptions"] == 0
    assert max(s["kv_usage_pct"] for s in record["stats_lines"]) >= 75


@pytest.mark.parametrize("release", RELEASES)
def test_each_release_folder_says_its_version(release):
    for path in (LIVE / release).glob("*.json"):
        assert "v" + json.loads(path.read_text())["vllm_version"] == release, path


def test_runtime_advice_for_the_live_preemption_bounds_the_sequences_to_what_fits():
    # 5,760 tokens of KV cache hold 1.41 requests of 4096 tokens: one sequence at a time never preempts.
    report = analyze_fixture("preemption")
    assert report.command.corrected.endswith("--max-num-seqs 1")
