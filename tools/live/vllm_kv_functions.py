"""vLLM 0.32's own KV cache functions on a model folder, without weights, for a CUDA launch (run with the vLLM venv).

The CPU build cannot start a CUDA engine, so this calls, one by one, the functions a CUDA start calls:
ModelConfig (the config read: KV heads per rank, head size, MLA, dtype), the model class's
get_mamba_state_shape_from_config / _dtype_from_config and the family's verify_and_update_config (the state),
Platform._align_hybrid_block_size with FlashAttention's kernel blocks (MultipleOf(16)), the per-layer
KVCacheSpec classes, get_kv_cache_groups, get_kv_cache_config_from_groups, get_kv_cache_capacity and
_estimate_max_model_len_from_groups. Which kind each layer is comes from the request (plan's reading of
the config; the live CPU captures check that reading on every family).

    python vllm_kv_functions.py REQUEST.json      # prints one JSON result per case in it

A request is a list of {"model_dir", "layer_kinds", "tensor_parallel", "max_model_len", "kv_cache_memory_bytes",
"max_num_batched_tokens"}. Nothing here is committed from vLLM: it is imported from the venv.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import sys
from types import SimpleNamespace

import torch
import vllm.config.vllm as vllm_config_module
from vllm.config import ModelConfig
from vllm.model_executor.models import ModelRegistry
from vllm.model_executor.models.config import (
    MODELS_CONFIG_MAP,
    HybridAttentionMambaModelConfig,
    MambaModelConfig,
)
from vllm.platforms.interface import Platform
from vllm.v1.attention.backend import MultipleOf
from vllm.v1.core import kv_cache_utils
from vllm.v1.kv_cache_interface import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
)
from vllm.v1.kv_cache_layout import KVCacheLayout

CUDA_BLOCK_SIZE = 16  # CacheConfig.DEFAULT_BLOCK_SIZE, kept by FlashAttention
FLASHMLA_BLOCK_SIZE = 64
CUDA_BATCHES_IN_FLIGHT = 2  # async scheduling


class FlashAttentionLike:
    """The two facts _align_hybrid_block_size reads from the CUDA attention backend."""

    @staticmethod
    def customize_spec(spec):
        return spec

    @staticmethod
    def get_supported_kernel_block_sizes(*_args):
        return [MultipleOf(16)]

    @staticmethod
    def is_ssm():
        return False


class CudaLike(Platform):
    @classmethod
    def _find_non_ssm_backends(cls, vllm_config):
        return [FlashAttentionLike]


def run(case: dict) -> dict:
    tp, length = case["tensor_parallel"], case["max_model_len"]
    model_config = ModelConfig(model=case["model_dir"], skip_tokenizer_init=True, max_model_len=length)
    parallel = SimpleNamespace(tensor_parallel_size=tp, decode_context_parallel_size=1, pipeline_parallel_size=1)
    kinds = case["layer_kinds"]
    has_state = any("mamba" in kind for kind in kinds)
    cache = SimpleNamespace(
        block_size=FLASHMLA_BLOCK_SIZE if model_config.use_mla else CUDA_BLOCK_SIZE,
        cache_dtype="auto",
        mamba_cache_dtype="auto",
        mamba_ssm_cache_dtype="auto",
        mamba_page_size_padded=None,
        mamba_block_size=None,
        mamba_cache_mode="none",
        enable_prefix_caching=model_config.is_prefix_caching_supported,
        use_replayssm=False,
        kv_cache_dtype_skip_layers=None,
        num_gpu_blocks_override=None,
        prefix_cache_retention_interval=None,
        get_resolved_kv_cache_layout=lambda: KVCacheLayout.LBHNC,
    )
    batched = case["max_num_batched_tokens"]
    config = SimpleNamespace(
        model_config=model_config,
        cache_config=cache,
        parallel_config=parallel,
        scheduler_config=SimpleNamespace(
            enable_chunked_prefill=True, disable_hybrid_kv_cache_manager=False, max_num_batched_tokens=batched
        ),
        speculative_config=None,
        num_speculative_tokens=0,
        num_prefill_lookahead_tokens=0,
        max_in_flight_tokens=CUDA_BATCHES_IN_FLIGHT * batched,
        attention_config=SimpleNamespace(hisparse_config=None),
    )
    model_cls = None
    if has_state:
        model_cls, _ = ModelRegistry.resolve_model_cls(model_config.architecture, model_config=model_config)
        (HybridAttentionMambaModelConfig if model_config.is_hybrid else MambaModelConfig).verify_and_update_config(
            config
        )
        family = MODELS_CONFIG_MAP.get(model_config.architecture)
        if family is not None and family not in (MambaModelConfig,):
            family.verify_and_update_config(config)
        if model_config.is_hybrid:
            CudaLike._align_hybrid_block_size(config, FlashAttentionLike)
    kv_heads, head, dtype = model_config.get_num_kv_heads(parallel), model_config.get_head_size(), model_config.dtype
    text = model_config.hf_text_config
    specs = {}
    for index, kind in enumerate(kinds):
        for part in kind.split("+"):
            name = f"layers.{index}.{part}"
            common = dict(block_size=cache.block_size, num_kv_heads=kv_heads, head_size=head, dtype=dtype)
            if part == "full":
                specs[name] = FullAttentionSpec(**common)
            elif part == "sliding":
                specs[name] = SlidingWindowSpec(**common, sliding_window=text.sliding_window)
            elif part == "chunked":
                specs[name] = ChunkedLocalAttentionSpec(**common, attention_chunk_size=text.attention_chunk_size)
            elif part == "mla":
                specs[name] = MLAAttentionSpec(**common, cache_dtype_str="auto")
            elif part == "mamba":
                # MambaMixer2.get_kv_cache_spec adds a prefill checkpoint page: does the model build that mixer?
                mamba2 = "MambaMixer2(" in inspect.getsource(sys.modules[model_cls.__module__])
                specs[name] = MambaSpec(
                    shapes=tuple(model_cls.get_mamba_state_shape_from_config(config)),
                    dtypes=tuple(model_cls.get_mamba_state_dtype_from_config(config)),
                    block_size=cache.mamba_block_size,
                    page_size_padded=cache.mamba_page_size_padded,
                    mamba_cache_mode=cache.mamba_cache_mode,
                    num_prefill_checkpoint_blocks=1 if mamba2 else 0,
                    prefill_checkpoint_alignment=1 if mamba2 else None,
                )
    groups = kv_cache_utils.get_kv_cache_groups(config, dict(specs))
    kv_bytes = case["kv_cache_memory_bytes"]
    kv_config = kv_cache_utils.get_kv_cache_config_from_groups(config, groups, kv_bytes)
    tokens, concurrency = kv_cache_utils.get_kv_cache_capacity(config, kv_config)
    null_block = kv_cache_utils._pool_bytes_per_block(config, groups)
    longest = kv_cache_utils._estimate_max_model_len_from_groups(config, groups, kv_bytes - null_block)
    return {
        **case,
        "block_size": cache.block_size,
        "num_blocks": kv_config.num_blocks,
        "tokens": tokens,
        "concurrency": f"{concurrency:.2f}",
        "longest": longest,
    }


def main() -> None:
    # The alignment code enters the config's context; these configs are plain namespaces.
    vllm_config_module.set_current_vllm_config = lambda *_a, **_k: contextlib.nullcontext()
    torch.set_num_threads(1)
    with open(sys.argv[1], encoding="utf-8") as handle:
        cases = json.load(handle)
    print(json.dumps([_run_or_refusal(case) for case in cases], indent=1))


def _run_or_refusal(case: dict) -> dict:
    """vLLM refusing a case (a config it cannot read, a TP it cannot split) is kept as its own words."""
    try:
        return run(case)
    except Exception as error:  # any refusal of vLLM's is a result to keep
        return {**case, "error": f"{type(error).__name__}: {error}"[:300]}


if __name__ == "__main__":
    main()
