"""Build tiny random-weight models of several architectures offline, for checking `plan` against vLLM."""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from build_tiny_model import build_tokenizer
from transformers import AutoConfig, AutoModelForCausalLM

# Small but shaped like the real families: head_dim 64 (vLLM 0.32's CPU attention rejects 16),
# and the keys each family's config.json really uses (sliding_window, layer_types, kv_lora_rank...).
ARCHITECTURES: dict[str, dict] = {
    "llama-mha": dict(
        model_type="llama",
        num_hidden_layers=2,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=4,
        head_dim=64,
    ),
    "llama-gqa": dict(
        model_type="llama",
        num_hidden_layers=3,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
    ),
    "llama-mqa": dict(
        model_type="llama",
        num_hidden_layers=2,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=64,
    ),
    # Every layer slides: vLLM gives each a sliding-window cache capped at the window.
    "mistral-sliding": dict(
        model_type="mistral",
        num_hidden_layers=2,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        sliding_window=512,
    ),
    # Interleaved: Gemma 2 alternates sliding and full layers (layer_types in its config).
    "gemma2-interleaved": dict(
        model_type="gemma2",
        num_hidden_layers=4,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        sliding_window=256,
        tie_word_embeddings=True,
    ),  # vLLM's Gemma 2 has no lm_head of its own
    # MLA: DeepSeek-V2 with one latent per token (kv_lora_rank + qk_rope_head_dim), no MoE layers.
    "deepseek-v2-mla": dict(
        model_type="deepseek_v2",
        num_hidden_layers=2,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=4,
        kv_lora_rank=64,
        q_lora_rank=None,
        qk_rope_head_dim=32,
        qk_nope_head_dim=32,
        v_head_dim=64,
        first_k_dense_replace=2,
        n_routed_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=64,
    ),
    # Hybrid: Jamba, mamba1 layers with attention every second layer, no MoE (one expert).
    "jamba-hybrid": dict(
        model_type="jamba",
        num_hidden_layers=4,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        attn_layer_period=2,
        attn_layer_offset=1,
        mamba_d_state=16,
        mamba_d_conv=4,
        mamba_expand=2,
        num_experts=1,
        use_mamba_kernels=False,
    ),
    # The families below keep the real models' layer patterns (fixtures/plan/configs has the real configs
    # where they were found), shrunk: a few layers, hidden 256, head size 64.
    # Pure Mamba (mamba1), attention-free: one state per request, no prefix caching.
    "mamba1-pure": dict(
        model_type="mamba",
        num_hidden_layers=2,
        hidden_size=256,
        state_size=16,
        conv_kernel=4,
        expand=2,
        use_mambapy=False,
    ),
    # Pure Mamba2: heads x head dim = expand x hidden, one group.
    "mamba2-pure": dict(
        model_type="mamba2",
        num_hidden_layers=2,
        hidden_size=256,
        expand=2,
        num_heads=8,
        head_dim=64,
        n_groups=1,
        state_size=16,
        conv_kernel=4,
    ),
    # Granite 4 hybrid (granitemoehybrid): Mamba2 layers with an attention layer among them.
    "granite4-hybrid": dict(
        model_type="granitemoehybrid",
        num_hidden_layers=4,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        layer_types=["mamba", "attention", "mamba", "mamba"],
        mamba_n_heads=8,
        mamba_d_head=64,
        mamba_n_groups=1,
        mamba_d_state=16,
        mamba_d_conv=4,
        mamba_expand=2,
        num_local_experts=0,
        shared_intermediate_size=512,
        position_embedding_type="nope",
    ),
    # The same with a Mamba2 state larger than a 128-token attention page: vLLM raises the block to hold it.
    "granite4-big-state": dict(
        model_type="granitemoehybrid",
        num_hidden_layers=4,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        layer_types=["mamba", "attention", "mamba", "mamba"],
        mamba_n_heads=8,
        mamba_d_head=64,
        mamba_n_groups=1,
        mamba_d_state=128,
        mamba_d_conv=4,
        mamba_expand=2,
        num_local_experts=0,
        shared_intermediate_size=512,
        position_embedding_type="nope",
    ),
    # Nemotron-H: M mamba2, * attention, - MLP (no cache), as in hybrid_override_pattern.
    "nemotron-h-hybrid": dict(
        model_type="nemotron_h",
        num_hidden_layers=6,
        hybrid_override_pattern="M-M*M-",
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        mamba_num_heads=8,
        mamba_head_dim=64,
        n_groups=1,
        ssm_state_size=16,
        conv_kernel=4,
        expand=2,
    ),
    # Falcon-H1: attention and Mamba2 side by side in every layer.
    "falcon-h1-parallel": dict(
        model_type="falcon_h1",
        num_hidden_layers=2,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        mamba_n_heads=8,
        mamba_d_head=64,
        mamba_d_ssm=512,
        mamba_n_groups=1,
        mamba_d_state=16,
        mamba_d_conv=4,
        mamba_expand=2,
    ),
    # Qwen3-Next: gated delta-net (linear_attention) with full attention every fourth layer.
    "qwen3-next-gdn": dict(
        model_type="qwen3_next",
        num_hidden_layers=4,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=64,
        linear_value_head_dim=64,
        linear_conv_kernel_dim=4,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=128,
        shared_expert_intermediate_size=128,
    ),
    # gpt-oss: sliding window with attention sinks on every even layer, full attention on the odd ones.
    "gpt-oss-sinks": dict(
        model_type="gpt_oss",
        num_hidden_layers=4,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        sliding_window=128,
        num_local_experts=4,
        num_experts_per_tok=2,
    ),
    # Gemma 3: five sliding (local) layers to one full (global) layer.
    "gemma3-local-global": dict(
        model_type="gemma3_text",
        num_hidden_layers=6,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        sliding_window=256,
        tie_word_embeddings=True,
    ),
    # Llama 4: chunked local attention on the RoPE layers, full attention on every fourth (NoPE) layer.
    "llama4-chunked": dict(
        model_type="llama4_text",
        num_hidden_layers=4,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        attention_chunk_size=256,
        num_local_experts=2,
        interleave_moe_layer_step=4,
        intermediate_size_mlp=512,
    ),
}


def build(name: str, out: Path, max_position_embeddings: int, dtype: str) -> dict:
    tokenizer = build_tokenizer(400)
    shape = dict(ARCHITECTURES[name])
    config = AutoConfig.for_model(
        shape.pop("model_type"),
        vocab_size=len(tokenizer),
        intermediate_size=2 * shape["hidden_size"],
        max_position_embeddings=max_position_embeddings,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=None,
        dtype=dtype,
        tie_word_embeddings=shape.pop("tie_word_embeddings", False),
        **shape,
    )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).to(getattr(torch, dtype))
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return {"name": name, "parameters": sum(p.numel() for p in model.parameters())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", default=list(ARCHITECTURES), help="default: all")
    parser.add_argument("--out", type=Path, required=True, help="one folder per architecture is made in it")
    parser.add_argument("--max-position-embeddings", type=int, default=32768)
    parser.add_argument("--dtype", default="bfloat16")
    args = parser.parse_args()
    for name in args.names:
        print(build(name, args.out / name, args.max_position_embeddings, args.dtype))


if __name__ == "__main__":
    main()
