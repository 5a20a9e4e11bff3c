"""One plan: vLLM's defaults for the device, the budget, the figures, a command that fits, what-ifs."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.defaults import UTILIZATION_FROM_0_21, raised_utilization
from advisor.plan import arithmetic, budget
from advisor.plan.arithmetic import Settings
from advisor.plan.config import config_int
from advisor.plan.figures import ASSUMED, COMPUTED, ESTIMATED, GIVEN, READ, AnyInput, Figure, Input, PlanError
from advisor.plan.model import ModelShape
from advisor.plan.request import Request, check
from advisor.plan.settings import batch_limits, settings_for

DEFAULT_UTILIZATION = UTILIZATION_FROM_0_21  # plan sizes for today's vLLM


@dataclass
class Plan:
    request: Request
    shape: ModelShape
    settings: Settings
    inputs: list[AnyInput]
    figures: list[Figure[int | float]]
    max_model_len: int
    fits: bool
    command: list[str]
    what_if: list[dict[str, Any]] = field(default_factory=list)

    @property
    def launch_length(self) -> int:
        """The length to launch with: the one asked for if it fits, else the longest that does, rounded."""
        return (
            self.max_model_len
            if self.fits
            else whole_kib_length(self.whole_figure("longest max-model-len for one sequence"))
        )

    def figure(self, name: str) -> Figure[int | float]:
        return next(f for f in self.figures if f.name == name)

    def whole_figure(self, name: str) -> int:
        """The value of a figure that is a whole number (a length, a budget in bytes)."""
        value = self.figure(name).value
        if not isinstance(value, int):
            raise TypeError(f"figure {name!r} is {value!r}, not a whole number")
        return value

    @property
    def command_line(self) -> str:
        return shlex.join(self.command)


def weights_figure(shape: ModelShape, request: Request) -> Figure[int]:
    world = request.tensor_parallel * request.pipeline_parallel
    split = Input("GPUs sharing the weights", world, GIVEN, "--tensor-parallel-size x --pipeline-parallel-size")
    if shape.weights is not None:
        total = Input("weights", shape.weights.bytes, READ, shape.weights.basis)
        return Figure(
            "weights per GPU", shape.weights.bytes // world, "bytes", "weights / (TP x PP)", (total, split), READ
        )
    total = Input(
        "weights",
        _estimated_weights(shape),
        ESTIMATED,
        "no safetensors: parameters counted from config.json at 2 bytes each",
    )
    return Figure("weights per GPU", total.value // world, "bytes", "weights / (TP x PP)", (total, split), ESTIMATED)


def _estimated_weights(shape: ModelShape) -> int:
    raw = shape.raw_config
    hidden = config_int(raw, "hidden_size", "n_embd", "d_model")
    vocab = config_int(raw, "vocab_size")
    experts = config_int(raw, "n_routed_experts", "num_local_experts", "num_experts")
    inner = (experts and config_int(raw, "moe_intermediate_size")) or config_int(raw, "intermediate_size") or 4 * hidden
    mlp = 3 * hidden * inner * max(1, experts)
    heads = shape.num_attention_heads
    attention = 2 * hidden * heads * shape.head_size + 2 * hidden * shape.num_kv_heads * shape.head_size
    embeddings = vocab * hidden * (1 if raw.get("tie_word_embeddings") else 2)
    return 2 * (embeddings + len(shape.layer_kinds) * (attention + mlp))


def plan(request: Request, shape: ModelShape, with_what_if: bool = True) -> Plan:
    check(request)
    inputs = list(shape.inputs)
    length = request.max_model_len or shape.max_model_len
    inputs.append(
        Input(
            "max model length",
            length,
            GIVEN if request.max_model_len else READ,
            "--max-model-len" if request.max_model_len else "the model's own (vLLM's default)",
        )
    )
    total = budget.gpu_total(request.gpu_memory, request.gpu)
    settings = settings_for(request, shape, total.value if total else None, length, inputs)
    weights = weights_figure(shape, request)
    kv_budget = _budget(request, shape, settings, total, weights, length)
    figures, fits = _figures(shape, settings, kv_budget.kv_bytes, length)
    figures = [figures[0], kv_budget.figure, *figures[1:], weights]
    result = Plan(request, shape, settings, inputs, figures, length, fits, [])
    result.command = serve_command(result)
    if with_what_if:
        result.what_if = what_if(result)
    return result


def _budget(
    request: Request, shape: ModelShape, settings: Settings, total: Input[int] | None, weights: Figure[int], length: int
) -> budget.Budget:
    if request.kv_cache_memory_bytes is not None:
        return budget.exact(Input("KV cache budget", request.kv_cache_memory_bytes, GIVEN, "--kv-cache-memory-bytes"))
    utilization = Input(
        "utilization",
        request.utilization or DEFAULT_UTILIZATION,
        GIVEN if request.utilization else ASSUMED,
        "--gpu-memory-utilization" if request.utilization else "vLLM's default from 0.21",
    )
    assert total is not None  # check() demands --gpu-memory or --gpu without --kv-cache-memory-bytes
    seqs, batched = batch_limits(request, total.value, length)
    return budget.from_memory(total, utilization, weights, shape, batched, seqs)


def _figures(
    shape: ModelShape, settings: Settings, kv_bytes: int, length: int
) -> tuple[list[Figure[int | float]], bool]:
    layout = arithmetic.layout(shape, settings)
    tp = Input("TP", settings.tensor_parallel, GIVEN, "--tensor-parallel-size")
    block = Input("block size", settings.block_size, COMPUTED, "vLLM's choice, or --block-size (see inputs)")
    per_token = Figure("KV bytes per token per GPU", layout.per_token_bytes, "bytes", _per_token_formula(shape), (tp,))
    per_block = Figure(
        "bytes per block",
        layout.bytes_per_block,
        "bytes",
        "layers in the widest KV cache group x page (block size x bytes per token per layer)",
        (block,),
    )
    capacity = arithmetic.capacity(layout, settings, kv_bytes, length)
    blocks = Figure(
        "KV cache blocks",
        capacity.num_blocks,
        "blocks",
        "budget // bytes per block (null block counted)",
        (Input("budget", kv_bytes, COMPUTED, "KV cache budget per GPU"),),
    )
    per_request = Figure(
        "blocks per request",
        capacity.blocks_per_request,
        "blocks",
        _per_request_formula(shape),
        (Input("length", length, GIVEN, "max model length"),),
    )
    tokens = Figure(
        "KV cache tokens",
        capacity.tokens,
        "tokens",
        "int(blocks / blocks per request x max model length) (vLLM's 'KV cache size')",
    )
    concurrency = Figure(
        "maximum concurrency", capacity.concurrency, "requests", "blocks / blocks per request (vLLM prints it %.2f)"
    )
    upper = max(length, shape.max_model_len)
    longest = Figure(
        "longest max-model-len for one sequence",
        arithmetic.longest_length(layout, settings, kv_bytes, upper),
        "tokens",
        f"vLLM's binary search over 1..{upper}: bytes per block x blocks per request <= budget - one (null) block",
    )
    fits = arithmetic.fits(layout, settings, kv_bytes, length)
    return [per_token, per_block, blocks, per_request, tokens, concurrency, longest], fits


def _per_token_formula(shape: ModelShape) -> str:
    if shape.is_mla:
        return "MLA layers x (kv_lora_rank + qk_rope_head_dim) x dtype bytes (full copy on every TP rank)"
    formula = "attention layers x 2 x max(1, KV heads / TP) x head size x dtype bytes"
    if "sliding" in shape.layer_kinds:
        formula += " (sliding layers hold only their window)"
    if shape.has_state:
        formula += "; mamba layers hold a fixed state instead"
    return formula


def _per_request_formula(shape: ModelShape) -> str:
    parts = ["per full-attention group cdiv(length, block)"]
    if "sliding" in shape.layer_kinds:
        parts.append("per sliding group cdiv(min(window - 1 + tokens in flight, length), block) + 1")
    if "chunked" in shape.layer_kinds:
        parts.append("per chunked group cdiv(min(chunk + tokens in flight, length), block)")
    if shape.has_state:
        parts.append("per mamba group its state pages")
    return ", ".join(parts)


def whole_kib_length(longest: int) -> int:
    """The longest length to launch with, rounded down to a multiple of 1024 when there is room for one
    (the log rules' round_length aims lower, at 60-80% of what fits, for room to serve)."""
    return longest // 1024 * 1024 if longest >= 1024 else longest


def serve_command(result: Plan) -> list[str]:
    """`vllm serve` with the length first (the longest that fits, if the asked one does not), then sequences."""
    request = result.request
    length = result.launch_length
    argv = ["vllm", "serve", str(Path(request.model_dir))]
    if length == 0:
        return argv  # nothing fits: no command would start
    for flag, value in (
        ("--tensor-parallel-size", request.tensor_parallel if request.tensor_parallel > 1 else None),
        ("--pipeline-parallel-size", request.pipeline_parallel if request.pipeline_parallel > 1 else None),
        ("--gpu-memory-utilization", request.utilization),
        ("--kv-cache-memory-bytes", request.kv_cache_memory_bytes),
        ("--kv-cache-dtype", None if request.kv_cache_dtype == "auto" else request.kv_cache_dtype),
        ("--block-size", request.block_size),
        ("--max-num-batched-tokens", request.max_num_batched_tokens),
    ):
        if value is not None:
            argv += [flag, str(value)]
    argv += ["--max-model-len", str(length)]
    settings = result.settings
    layout = arithmetic.layout(result.shape, settings)
    kv_bytes = result.whole_figure("KV cache budget per GPU")
    concurrent = int(arithmetic.capacity(layout, settings, kv_bytes, length).concurrency)
    if request.max_num_seqs is not None or concurrent < 256:
        argv += ["--max-num-seqs", str(max(1, min(concurrent, request.max_num_seqs or concurrent)))]
    return argv


def what_if(result: Plan) -> list[dict[str, Any]]:
    """The same plan with one knob moved (fp8 KV, twice the TP, utilization +0.02), at the launch length."""
    request = replace(result.request, max_model_len=result.launch_length or result.max_model_len)
    variants = []
    if request.kv_cache_dtype == "auto" or arithmetic.DTYPE_BYTES.get(request.kv_cache_dtype, 1) > 1:
        variants.append(("--kv-cache-dtype fp8", replace(request, kv_cache_dtype="fp8")))
    variants.append(
        (
            f"--tensor-parallel-size {request.tensor_parallel * 2}",
            replace(request, tensor_parallel=request.tensor_parallel * 2),
        )
    )
    if request.kv_cache_memory_bytes is None:
        raised = raised_utilization(request.utilization or DEFAULT_UTILIZATION)
        if raised:
            variants.append((f"--gpu-memory-utilization {raised}", replace(request, utilization=raised)))
    rows: list[dict[str, Any]] = []
    for change, variant in variants:
        try:
            other = plan(variant, result.shape, with_what_if=False)
        except PlanError as error:
            rows.append({"change": change, "error": str(error)})
            continue
        rows.append(
            {
                "change": change,
                "kv_cache_tokens": other.figure("KV cache tokens").value,
                "longest_max_model_len": other.figure("longest max-model-len for one sequence").value,
                "concurrency": other.figure("maximum concurrency").value,
                "max_model_len": other.max_model_len,
            }
        )
    return rows
