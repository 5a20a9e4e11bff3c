"""vLLM's choices for a device and a model (block size, batch limits, dtype, the state's pages), each
noted as given, read or assumed."""

from __future__ import annotations

from dataclasses import replace

from advisor.defaults import MLA_BLOCK_SIZE, block_size
from advisor.plan import arithmetic
from advisor.plan.arithmetic import Settings
from advisor.plan.budget import GIB
from advisor.plan.figures import ASSUMED, GIVEN, READ, AnyInput, Input
from advisor.plan.model import ModelShape
from advisor.plan.request import KERNEL_ALIGNMENT, Request


def settings_for(
    request: Request, shape: ModelShape, total_memory: int | None, length: int, inputs: list[AnyInput]
) -> Settings:
    """vLLM's choices for this device and model, each noted as given, read or assumed."""
    cpu = request.device == "cpu"
    kv_bytes = 2 if request.kv_cache_dtype == "auto" else arithmetic.DTYPE_BYTES[request.kv_cache_dtype]
    inputs.append(
        Input(
            "KV dtype bytes",
            kv_bytes,
            GIVEN if request.kv_cache_dtype != "auto" else READ,
            f"--kv-cache-dtype {request.kv_cache_dtype}"
            + (f" (the model dtype, {shape.model_dtype})" if request.kv_cache_dtype == "auto" else ""),
        )
    )
    _seqs, batched = batch_limits(request, total_memory, length)
    # CPU turns async scheduling off: one batch in flight; CUDA's async scheduling keeps two (PP: one per stage).
    batches = 1 if cpu else (2 if request.pipeline_parallel == 1 else request.pipeline_parallel)
    if "sliding" in shape.layer_kinds or "chunked" in shape.layer_kinds:
        inputs.append(
            Input(
                "tokens in flight",
                batches * batched,
                GIVEN if request.max_num_batched_tokens else ASSUMED,
                f"{batches} batch(es) x {batched} batched tokens (vLLM's default for "
                f"{request.device}; --max-num-batched-tokens sets it)",
            )
        )
    block, basis = _block_size(request, shape)
    ssm_bytes = _ssm_state_bytes(shape, request, inputs)
    settings = Settings(
        request.tensor_parallel,
        request.pipeline_parallel,
        block,
        kv_bytes,
        2,
        ssm_bytes,
        batches * batched,
        prefix_caching=not shape.is_attention_free,
    )
    if shape.is_hybrid:
        raised = arithmetic.hybrid_block_size(shape, settings, KERNEL_ALIGNMENT[request.device])
        if raised != block:
            block, basis = raised, f"raised from {block} so one attention page holds a mamba state (vLLM does)"
        settings = replace(settings, block_size=block)
    if shape.mamba is not None:
        inputs.append(_state_pages_input(shape))
    inputs.append(Input("block size", block, GIVEN if request.block_size and not shape.is_hybrid else ASSUMED, basis))
    return settings


def _state_pages_input(shape: ModelShape) -> Input[int]:
    """How many state pages a recurrent layer holds per request, as vLLM's MambaSpec counts them."""
    assert shape.mamba is not None
    if shape.is_attention_free:
        return Input(
            "state pages per request", 1, ASSUMED, "attention-free: prefix caching off, mamba_cache_mode 'none'"
        )
    pages = 2 + shape.mamba.checkpoint_pages
    basis = "prefix caching on (vLLM's default): mamba_cache_mode 'align' keeps 2 state pages"
    if shape.mamba.checkpoint_pages:
        basis += ", and a Mamba2 mixer 1 prefill checkpoint page"
    return Input("state pages per request", pages, ASSUMED, basis)


def _ssm_state_bytes(shape: ModelShape, request: Request, inputs: list[AnyInput]) -> int:
    """The SSM state's dtype: the model's, unless the family's config or vLLM's CPU platform says otherwise."""
    if shape.mamba is None:
        return 2
    # NemotronH and Qwen3.5 (models/config.py) take mamba_ssm_cache_dtype 'auto' from config.json.
    if shape.model_type == "nemotron_h":
        configured = str(shape.raw_config.get("mamba_ssm_cache_dtype", "float32"))
        basis = f"NemotronH: config.json mamba_ssm_cache_dtype, else float32 ({configured})"
    elif shape.model_type.startswith("qwen3_5") and shape.raw_config.get("mamba_ssm_dtype"):
        configured = str(shape.raw_config["mamba_ssm_dtype"])
        basis = f"Qwen3.5: config.json mamba_ssm_dtype ({configured})"
    else:
        configured, basis = "auto", "mamba_ssm_cache_dtype auto: the model dtype"
    kept_on_cpu = configured in ("float16", "bfloat16") and shape.mamba.kind == "gdn"
    if configured != "float32" and request.device == "cpu" and "avx512_bf16" in request.cpu_flags and not kept_on_cpu:
        configured, basis = "float32", "CPU with avx512_bf16 (--cpu-flags): vLLM resets the SSM cache to float32"
    size = 4 if configured == "float32" else 2
    inputs.append(Input("SSM state dtype bytes", size, ASSUMED, basis))
    return size


def batch_limits(request: Request, total_memory: int | None, length: int) -> tuple[int, int]:
    """--max-num-seqs and --max-num-batched-tokens, or vLLM's defaults for the API server on this device."""
    cpu, world = request.device == "cpu", request.tensor_parallel * request.pipeline_parallel
    seqs = request.max_num_seqs or _default_seqs(cpu, world, total_memory)
    return seqs, request.max_num_batched_tokens or min(seqs * length, _default_batched(cpu, world, total_memory))


def _default_seqs(cpu: bool, world: int, total: int | None) -> int:
    if cpu:
        return 128 * world
    return 1024 if total and total >= 70 * GIB else 256


def _default_batched(cpu: bool, world: int, total: int | None) -> int:
    if cpu:
        return 2048 * world
    if total and total >= 160 * GIB:
        return 16384
    return 8192 if total and total >= 70 * GIB else 2048


def _block_size(request: Request, shape: ModelShape) -> tuple[int, str]:
    if shape.is_mla and request.device == "cpu" and "amx_tile" not in request.cpu_flags:
        return (
            MLA_BLOCK_SIZE["cpu"],
            "vLLM's CPU MLA kernel without AMX (no amx_tile in --cpu-flags) needs 16, whatever --block-size says",
        )
    if request.block_size:
        return request.block_size, f"--block-size {request.block_size}"
    if shape.is_mla:
        return MLA_BLOCK_SIZE["cuda"], "FlashMLA's block (Hopper); other MLA backends choose their own"
    return block_size(request.device), f"vLLM's {'CPU' if request.device == 'cpu' else 'CUDA'} default"
