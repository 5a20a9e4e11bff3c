"""Logs captured from live vLLM 0.32.0 runs (fixtures/live): each classified as its scenario says."""
from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, analyze_fixture

SCENARIOS = sorted(p.stem for p in (FIXTURES / "live").glob("*.json"))


@pytest.mark.parametrize("name", SCENARIOS)
def test_live_scenario_is_classified_as_captured(name):
    label = json.loads((FIXTURES / "live" / f"{name}.json").read_text())["label"]
    verdict = analyze_fixture(name).verdict
    assert (verdict.phase, verdict.failure) == (label["phase"], label["failure"])


def test_all_seven_scenarios_are_present():
    assert set(SCENARIOS) >= {"kv-shortfall", "healthy", "preemption", "max-len-exceeds-model", "tp-invalid",
                              "port-in-use", "request-too-long"}


def test_runtime_advice_for_the_live_preemption_bounds_the_sequences_to_what_fits():
    # 5,760 tokens of KV cache hold 1.41 requests of 4096 tokens: one sequence at a time never preempts.
    report = analyze_fixture("preemption")
    assert report.command.corrected.endswith("--max-num-seqs 1")
