"""Every real config.json in fixtures/plan/configs loads and plans on one GPU and on TP 2, 4 and 8.

A refusal is allowed only where vLLM refuses too: a TP that does not divide what it must split.
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from advisor.plan import model, planner
from advisor.plan.figures import PlanError
from advisor.plan.request import Request

CONFIGS = FIXTURES / "plan/configs"
NAMES = sorted(path.name for path in CONFIGS.iterdir() if (path / "config.json").exists())
GIB = 1024**3


def test_real_configs_carry_where_they_came_from():
    assert len(NAMES) >= 30
    for name in NAMES:
        if name in ("deepseek-v2-lite", "gemma-2-9b", "jamba-v0.1", "llama-3.1-8b", "mistral-7b-v0.1"):
            continue  # the first five, from before SOURCE notes; their origin is in docs/plan.md
        assert (CONFIGS / name / "SOURCE").read_text().strip(), name


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
@pytest.mark.parametrize("name", NAMES)
def test_every_real_config_plans_at_every_tp(name, tp):
    shape = model.load(CONFIGS / name)
    request = Request(str(CONFIGS / name), kv_cache_memory_bytes=20 * GIB, tensor_parallel=tp)
    try:
        result = planner.plan(request, shape)
    except PlanError as error:
        assert "does not divide" in str(error), error
        return
    assert result.figure("KV cache tokens").value > 0
    assert result.figure("bytes per block").value > 0
