"""plan on the hybrid and other families, on real configs, the arithmetic written out from vLLM 0.32's rules
(mamba_utils.py's state shapes, kv_cache_interface.py's MambaSpec pages, platforms/interface.py's
_align_hybrid_block_size, kv_cache_utils.py's groups), not computed by the code under test; and the families
plan refuses, each by name."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from advisor.plan import model, planner
from advisor.plan.figures import PlanError
from advisor.plan.request import Request

CONFIGS = FIXTURES / "plan/configs"
GIB = 1024**3


def plan(name: str, **flags) -> planner.Plan:
    return planner.plan(Request(str(CONFIGS / name), **flags), model.load(CONFIGS / name))


def value(result: planner.Plan, name: str):
    return result.figure(name).value


def test_qwen3_next_gated_delta_net_state_and_block():
    # Qwen3-Next-80B-A3B: 48 layers, full attention every 4th (full_attention_interval 4): 12 full, 36 GDN.
    result = plan("qwen3-next-80b-a3b-thinking", kv_cache_memory_bytes=20 * GIB, max_model_len=32768)
    assert result.shape.layer_kinds == ["mamba", "mamba", "mamba", "full"] * 12
    # gated_delta_net_state_shape: conv (16 x 128 x 2 + 32 x 128) x (4 - 1), recurrent 32 x 128 x 128, bf16.
    state = (16 * 128 * 2 + 32 * 128) * 3 * 2 + 32 * 128 * 128 * 2
    assert state == 1_097_728
    # Attention per token per layer: 2 KV heads x 2 x 256 x 2 B = 2048 B. The block grows from 16 to
    # 16 x cdiv(state, 16 x 2048) = 16 x 34 = 544 tokens so that one attention page holds a state.
    assert result.settings.block_size == 544
    # Groups of 12 (36 < 1.5 x 12 is false): one full-attention group, three GDN groups, a block costs
    # 12 pages of 544 x 2048 B.
    assert value(result, "bytes per block") == 12 * 544 * 2048
    # Per request: cdiv(32768, 544) = 61 attention blocks + 3 GDN groups x 2 state pages (align mode).
    assert value(result, "blocks per request") == 61 + 3 * 2
    blocks = 20 * GIB // (12 * 544 * 2048)
    assert value(result, "KV cache blocks") == blocks
    assert value(result, "KV cache tokens") == int(blocks / 67 * 32768)
    # TP 2 halves the GDN state (heads split) and the KV heads: 1 per rank.
    tp2 = plan("qwen3-next-80b-a3b-thinking", kv_cache_memory_bytes=20 * GIB, tensor_parallel=2)
    assert tp2.settings.block_size == 16 * -(-(state // 2) // (16 * 1024))


def test_mla_models_keep_their_latent(tmp_path):
    # Kimi-K2: DeepSeek-V3's MLA (kv_lora_rank 512 + qk_rope_head_dim 64) on 61 layers.
    result = plan("kimi-k2-instruct", kv_cache_memory_bytes=20 * GIB)
    assert result.shape.layer_kinds == ["mla"] * 61
    assert value(result, "KV bytes per token per GPU") == 61 * 576 * 2


def test_gpt_oss_slides_on_even_layers_whatever_layer_types_says(tmp_path):
    config = json.loads((CONFIGS / "llama-3.1-8b/config.json").read_text())
    config.update(model_type="gpt_oss", num_hidden_layers=4, sliding_window=128, layer_types=["full_attention"] * 4)
    (tmp_path / "config.json").write_text(json.dumps(config))
    # OAIAttention: sliding_window if layer_idx % 2 == 0.
    assert model.load(tmp_path).layer_kinds == ["sliding", "full", "sliding", "full"]


def test_llama4_chunked_layers_hold_a_chunk_and_what_is_in_flight(tmp_path):
    config = json.loads((CONFIGS / "llama-3.1-8b/config.json").read_text())
    config.update(model_type="llama4_text", attention_chunk_size=8192, num_hidden_layers=8)
    (tmp_path / "config.json").write_text(json.dumps(config))
    shape = model.load(tmp_path)
    # transformers' default no_rope_layers: every fourth layer NoPE (full), the rest chunked.
    assert shape.layer_kinds == ["chunked", "chunked", "chunked", "full"] * 2
    # VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to 1: the hybrid manager stays on, so 6
    # chunked layers and 2 full ones make groups of 2: one full group, three chunked groups.
    request = Request(str(tmp_path), kv_cache_memory_bytes=GIB, max_model_len=32768, max_num_batched_tokens=2048)
    result = planner.plan(request, shape)
    # Per request: full cdiv(32768, 16) = 2048; chunked cdiv(min(8192 + 2 x 2048, 32768), 16) = 768 per group.
    assert value(result, "blocks per request") == 2048 + 3 * 768
    assert value(result, "bytes per block") == 2 * 16 * 8 * 2 * 128 * 2


@pytest.mark.parametrize(
    "model_type, words",
    [
        ("bamba", "no longer serves Bamba"),
        ("minimax", "no longer serves MiniMax-Text-01"),
        ("zamba2", "not modelled"),
        ("kimi_linear", "not modelled"),
        ("my_new_arch", "'my_new_arch' is not a family plan knows"),
    ],
)
def test_unknown_and_unsupported_families_are_refused_by_name(tmp_path, model_type, words):
    config = json.loads((CONFIGS / "llama-3.1-8b/config.json").read_text())
    config["model_type"] = model_type
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(PlanError, match=words) as error:
        model.load(tmp_path)
    assert "\n" not in str(error.value)


def test_unknown_layer_type_is_refused_by_name(tmp_path):
    config = json.loads((CONFIGS / "llama-3.1-8b/config.json").read_text())
    config["layer_types"] = ["full_attention"] * 31 + ["compressed_attention"]
    config["sliding_window"] = 4096
    config["model_type"] = "gemma3_text"
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(PlanError, match="layer type 'compressed_attention'"):
        model.load(tmp_path)


def test_mla_with_a_sparse_attention_indexer_is_refused(tmp_path):
    # DeepSeek-V3.2's index_topk gives every layer an indexer cache beside the latent: not sized, so refused.
    config = json.loads((CONFIGS / "kimi-k2-instruct/config.json").read_text())
    config.update(model_type="deepseek_v32", index_topk=2048)
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(PlanError, match="indexer cache"):
        model.load(tmp_path)
