"""Real GPU logs against plan (fixtures/plan/gpu-logs.json): the printed KV cache memory, at either end of its
rounding, gives a token interval that holds the printed KV cache size; docs/plan.md keeps the table."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import gpu_log_table

CASES = gpu_log_table.cases()


def test_at_least_fifteen_logs_and_every_config_is_real():
    assert len(CASES) >= 15
    for case in CASES:
        assert (gpu_log_table.CONFIGS / case.config / "SOURCE").exists(), case.config


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.log.split("/")[1].split("-")[0])
def test_printed_tokens_lie_inside_plans_interval(case):
    low, high = gpu_log_table.interval(case)
    assert low <= case.tokens <= high


def test_docs_table_is_the_logs():
    assert "\n".join(gpu_log_table.rows()) + "\n" in (ROOT / "docs" / "plan.md").read_text()
