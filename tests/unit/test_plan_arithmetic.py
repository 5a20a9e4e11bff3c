"""plan's arithmetic per layer type, on real models' published dimensions, checked by hand.

Each expectation is written out from the config's numbers and vLLM 0.32's rules
(kv_cache_interface.py, kv_cache_utils.py), not computed by the code under test.
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from advisor.plan import model, planner
from advisor.plan.figures import PlanError
from advisor.plan.request import Request

CONFIGS = FIXTURES / "plan/configs"
GIB = 1024**3


def plan(name: str, **flags) -> planner.Plan:
    request = Request(str(CONFIGS / name), **flags)
    return planner.plan(request, model.load(CONFIGS / name))


def value(result: planner.Plan, name: str):
    return result.figure(name).value


def test_gqa_llama_full_attention():
    # Llama-3.1-8B: 32 layers, 8 KV heads, head size 4096 / 32 = 128, bf16.
    result = plan("llama-3.1-8b", kv_cache_memory_bytes=8 * GIB, max_model_len=131072)
    assert value(result, "KV bytes per token per GPU") == 32 * 2 * 8 * 128 * 2 == 131072
    # CUDA block of 16 tokens: one block of all 32 layers is 16 x 131072 B = 2 MiB.
    assert value(result, "bytes per block") == 16 * 131072 == 2 * 1024**2
    assert value(result, "KV cache blocks") == 8 * GIB // (2 * 1024**2) == 4096
    # A 131072-token request needs 131072 / 16 = 8192 blocks: half a request fits.
    assert value(result, "blocks per request") == 8192
    assert value(result, "maximum concurrency") == 0.5
    assert value(result, "KV cache tokens") == 65536
    # Longest: blocks x 2 MiB <= 8 GiB - one null block of 2 MiB, so 4095 blocks of 16 tokens.
    assert value(result, "longest max-model-len for one sequence") == 4095 * 16 == 65520
    assert not result.fits
    # The command keeps the length first: the longest multiple of 1024 that fits, then sequences.
    assert result.command[-4:] == ["--max-model-len", "64512", "--max-num-seqs", "1"]


def test_max_model_len_default_is_the_models_own():
    # llama3 RoPE scaling is already in max_position_embeddings: vLLM does not multiply it again.
    assert plan("llama-3.1-8b", kv_cache_memory_bytes=8 * GIB).max_model_len == 131072


@pytest.mark.parametrize("tp, kv_heads_per_gpu", [(2, 4), (8, 1), (16, 1), (32, 1)])
def test_kv_heads_split_over_tp_and_replicated_beyond(tp, kv_heads_per_gpu):
    # max(1, 8 // TP): at TP 16 and 32 each GPU keeps a copy of one KV head.
    result = plan("llama-3.1-8b", kv_cache_memory_bytes=8 * GIB, tensor_parallel=tp)
    assert value(result, "KV bytes per token per GPU") == 32 * 2 * kv_heads_per_gpu * 128 * 2


def test_mha_and_mqa_from_the_same_rule(tmp_path):
    import json

    config = json.loads((CONFIGS / "llama-3.1-8b/config.json").read_text())
    del config["num_key_value_heads"]  # no KV head count: one per attention head (MHA)
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert (
        value(
            planner.plan(Request(str(tmp_path), kv_cache_memory_bytes=GIB), model.load(tmp_path)),
            "KV bytes per token per GPU",
        )
        == 32 * 2 * 32 * 128 * 2
    )
    config.update(model_type="falcon", multi_query=True)  # Falcon's old decoder: multi_query, one KV head
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert (
        value(
            planner.plan(Request(str(tmp_path), kv_cache_memory_bytes=GIB), model.load(tmp_path)),
            "KV bytes per token per GPU",
        )
        == 32 * 2 * 1 * 128 * 2
    )


def test_sliding_window_mistral_caps_every_layer_at_its_window():
    # Mistral-7B-v0.1: sliding_window 4096 on all 32 layers, 8 KV heads x 128, bf16, CUDA block 16.
    # In flight: 2 batches (CUDA async scheduling) x 2048 batched tokens = 4096.
    result = plan("mistral-7b-v0.1", kv_cache_memory_bytes=4 * GIB, max_num_batched_tokens=2048)
    assert result.shape.layer_kinds == ["sliding"] * 32
    assert value(result, "bytes per block") == 32 * 16 * 8 * 2 * 128 * 2 == 2 * 1024**2
    # A request holds min(4096 - 1 + 4096, 32768) = 8191 tokens: cdiv(8191, 16) + 1 = 513 blocks,
    # not the 32768 / 16 = 2048 a full-attention layer would need.
    assert value(result, "blocks per request") == 513
    assert value(result, "KV cache blocks") == 2048
    assert value(result, "maximum concurrency") == 2048 / 513
    assert value(result, "KV cache tokens") == int(2048 / 513 * 32768) == 130816
    # The window caps what one request needs, so the model's own 32768 fits.
    assert value(result, "longest max-model-len for one sequence") == 32768


def test_interleaved_gemma2_pads_groups_of_sliding_and_full_layers():
    # gemma-2-9b: 42 layers alternating sliding (window 4096) and full, 8 KV heads x 256, float32 checkpoint
    # run in bf16. 21 sliding + 21 full: two KV cache groups of 21 layers sharing one block pool.
    result = plan("gemma-2-9b", kv_cache_memory_bytes=4 * GIB, max_num_batched_tokens=2048)
    assert result.shape.layer_kinds == ["sliding", "full"] * 21
    page = 16 * 8 * 2 * 256 * 2  # one layer's block: 131072 B
    assert value(result, "bytes per block") == 21 * page == 2752512
    # Per request at 8192: full cdiv(8192, 16) = 512, sliding cdiv(min(4095 + 4096, 8192), 16) + 1 = 513.
    assert value(result, "blocks per request") == 512 + 513
    blocks = 4 * GIB // 2752512
    assert value(result, "KV cache blocks") == blocks == 1560
    assert value(result, "KV cache tokens") == int(1560 / 1025 * 8192) == 12467


def test_qwen2_without_use_sliding_window_is_full_attention(tmp_path):
    import json

    config = json.loads((CONFIGS / "mistral-7b-v0.1/config.json").read_text())
    config.update(model_type="qwen2", sliding_window=131072, use_sliding_window=False)
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert model.load(tmp_path).layer_kinds == ["full"] * 32


def test_mla_deepseek_keeps_one_latent_per_token_on_every_tp_rank():
    # DeepSeek-V2-Lite: 27 MLA layers, kv_lora_rank 512 + qk_rope_head_dim 64 = 576 per token, bf16.
    for tp in (1, 2, 4):  # not divided by TP: every rank holds the whole latent
        result = plan("deepseek-v2-lite", kv_cache_memory_bytes=2 * GIB, max_model_len=32768, tensor_parallel=tp)
        assert value(result, "KV bytes per token per GPU") == 27 * 576 * 2 == 31104
    # CUDA MLA (FlashMLA) block of 64 tokens: 27 x 64 x 1152 B per block.
    assert value(result, "bytes per block") == 27 * 64 * 1152 == 1990656
    assert value(result, "KV cache blocks") == 2 * GIB // 1990656 == 1078
    assert value(result, "blocks per request") == 32768 // 64 == 512
    assert value(result, "KV cache tokens") == int(1078 / 512 * 32768) == 68992
    # yarn's factor is already in max_position_embeddings: the model's own length is 163840.
    assert result.shape.max_model_len == 163840


def test_mla_on_cpu_uses_the_reference_kernels_block_of_16():
    result = plan("deepseek-v2-lite", kv_cache_memory_bytes=GIB, device="cpu", block_size=128)
    assert result.settings.block_size == 16
    assert value(result, "bytes per block") == 27 * 16 * 1152


def test_cpu_flags_are_the_serving_machines_not_this_hosts():
    # The machine planned for is an input: with AMX, vLLM's CPU MLA kernel takes the block asked for;
    # with AVX512-BF16, it keeps the SSM state in float32.
    amx = plan(
        "deepseek-v2-lite", kv_cache_memory_bytes=GIB, device="cpu", block_size=128, cpu_flags=frozenset({"amx_tile"})
    )
    assert amx.settings.block_size == 128
    for given, ssm_bytes in ((frozenset(), 2), (frozenset({"avx512_bf16"}), 4)):
        hybrid = plan("jamba-v0.1", kv_cache_memory_bytes=8 * GIB, max_model_len=32768, device="cpu", cpu_flags=given)
        assert hybrid.settings.ssm_state_bytes == ssm_bytes, given


def test_hybrid_jamba_mamba_state_sets_the_block_size():
    # Jamba-v0.1: 32 layers, attention where i % 8 == 4 (4 layers), mamba1 elsewhere (28 layers).
    result = plan("jamba-v0.1", kv_cache_memory_bytes=8 * GIB, max_model_len=32768)
    assert result.shape.layer_kinds.count("full") == 4 and result.shape.layer_kinds.count("mamba") == 28
    # Mamba1 state of one layer: inner 2 x 4096 = 8192; conv 8192 x (4 - 1) + ssm 8192 x 16, bf16.
    state = (8192 * 3 + 8192 * 16) * 2
    assert state == 311296
    # Attention per token per layer: 8 KV heads x 2 x 128 x 2 B = 4096 B. vLLM raises the block from 16 to
    # 16 x cdiv(311296, 16 x 4096) = 80 tokens so that one attention page (327680 B) holds a state.
    assert result.settings.block_size == 80
    # Groups of 4 layers (the attention count): 1 attention group, 28 / 4 = 7 mamba groups; a block costs
    # 4 pages of 327680 B.
    assert value(result, "bytes per block") == 4 * 80 * 4096 == 1310720
    # Per request: cdiv(32768, 80) = 410 attention blocks + 7 groups x 2 state pages (prefix caching's
    # 'align' mode keeps two).
    assert value(result, "blocks per request") == 410 + 14
    assert value(result, "KV cache blocks") == 8 * GIB // 1310720 == 6553
    assert value(result, "KV cache tokens") == int(6553 / 424 * 32768)


def test_budget_from_gpu_memory_is_an_estimate_with_its_basis():
    result = plan("llama-3.1-8b", gpu="rtx-3090", max_model_len=8192)
    budget = result.figure("KV cache budget per GPU")
    assert budget.source == "estimated"
    total = next(i for i in budget.inputs if i.name == "GPU memory")
    assert total.value == int(23.58 * GIB) and total.source == "read"
    weights = next(i for i in budget.inputs if i.name == "weights per GPU")
    allowance = next(i for i in budget.inputs if i.name == "activation + runtime allowance")
    assert budget.value == int(total.value * 0.92) - weights.value - allowance.value
    assert allowance.source == "estimated" and "profiling peak" in allowance.basis


def test_what_if_fp8_doubles_the_tokens():
    result = plan("llama-3.1-8b", kv_cache_memory_bytes=8 * GIB, max_model_len=32768)
    rows = {row["change"]: row for row in result.what_if}
    assert rows["--kv-cache-dtype fp8"]["kv_cache_tokens"] == 2 * value(result, "KV cache tokens")
    assert rows["--tensor-parallel-size 2"]["kv_cache_tokens"] == 2 * value(result, "KV cache tokens")


def test_tp_that_does_not_divide_the_heads_is_refused():
    with pytest.raises(PlanError, match="does not divide the 32 attention heads"):
        plan("llama-3.1-8b", kv_cache_memory_bytes=GIB, tensor_parallel=3)


def test_pipeline_stages_hold_their_own_layers():
    # PP 2 over 32 layers: 16 per stage, so each GPU's block holds 16 layers' pages.
    result = plan("llama-3.1-8b", kv_cache_memory_bytes=8 * GIB, pipeline_parallel=2)
    assert value(result, "KV bytes per token per GPU") == 16 * 2 * 8 * 128 * 2
    # 27 layers over PP 2 (DeepSeek-V2-Lite): vLLM's get_pp_indices gives [14, 13]; the first stage is fuller.
    result = plan("deepseek-v2-lite", kv_cache_memory_bytes=GIB, pipeline_parallel=2)
    assert value(result, "KV bytes per token per GPU") == 14 * 576 * 2


def test_linear_rope_scaling_multiplies_the_models_length(tmp_path):
    import json

    config = json.loads((CONFIGS / "mistral-7b-v0.1/config.json").read_text())
    config["rope_scaling"] = {"type": "linear", "factor": 2.0}  # vLLM multiplies it in; llama3 and yarn not
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert model.load(tmp_path).max_model_len == 2 * 32768
