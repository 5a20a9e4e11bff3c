"""plan against what vLLM 0.32 printed for tiny models of each architecture (fixtures/plan, captured live)."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import plan_table

CASES = plan_table.cases()


def test_every_architecture_is_captured():
    architectures = {case["architecture"] for case in CASES}
    assert {
        "llama-mha",
        "llama-gqa",
        "llama-mqa",
        "mistral-sliding",
        "gemma2-interleaved",
        "deepseek-v2-mla",
        "jamba-hybrid",
        "mamba1-pure",
        "mamba2-pure",
        "granite4-hybrid",
        "nemotron-h-hybrid",
        "falcon-h1-parallel",
    } <= architectures
    assert {case["case"] for case in CASES} == {"fits", "too-long"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['architecture']}-{c['case']}")
def test_plan_equals_what_vllm_printed(case):
    result = plan_table.predicted(plan_table.FIXTURES / case["architecture"], case)
    printed = plan_table.vllm_printed((plan_table.FIXTURES / case["log"]).read_text())
    if case["case"] == "fits":
        assert result.fits
        assert printed["length"] == case["max_model_len"]
        assert result.figure("KV cache tokens").value == printed["tokens"]
        assert f"{result.figure('maximum concurrency').value:.2f}" == printed["concurrency"]
    else:
        assert not result.fits
        assert result.figure("longest max-model-len for one sequence").value == printed["estimate"]


def test_readme_table_is_the_fixtures():
    assert "\n".join(plan_table.rows()) + "\n" in (ROOT / "docs" / "plan.md").read_text()
