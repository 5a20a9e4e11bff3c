"""The KV cache budget per GPU: exactly --kv-cache-memory-bytes, or utilization x total - weights - an allowance."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.plan.config import config_int
from advisor.plan.figures import ESTIMATED, GIVEN, READ, Figure, Input, PlanError
from advisor.plan.model import ModelShape

GIB = 1024**3
# Usable memory as torch reports it (vLLM's total_gpu_memory, or torch's "total capacity" in an OOM),
# from real logs in the corpus; the case id says which.
KNOWN_GPUS = {
    "rtx-3090": (23.58, "corpus 001, 044: total_gpu_memory=23.58GiB"),
    "a800-80gb": (79.33, "corpus 036: GPU 0 has a total capacity of 79.33 GiB"),
    "h100-nvl": (93.09, "corpus 026: GPU 0 has a total capacity of 93.09 GiB"),
    "h20-141gb": (139.72, "corpus 027: GPU 0 has a total capacity of 139.72 GiB"),
}
# What the corpus shows vLLM needs outside torch's tensors (CUDA context, NCCL): 0.35 GiB on an RTX 3090
# (corpus 001, non_torch_memory=0.35GiB); CUDA graphs add their pool on top. One round allowance for both.
RUNTIME_ALLOWANCE_GIB = 1.0


@dataclass(frozen=True)
class Budget:
    kv_bytes: int  # per GPU
    figure: Figure[int]
    total_bytes: int | None  # the GPU's memory, when the budget came from it
    utilization: float | None


def gpu_total(gpu_memory: str | None, gpu: str | None) -> Input[int] | None:
    if gpu is not None:
        key = gpu.lower().replace(" ", "-")
        if key not in KNOWN_GPUS:
            raise PlanError(f"unknown --gpu {gpu!r}; known: {', '.join(KNOWN_GPUS)} (or give --gpu-memory)")
        gib, basis = KNOWN_GPUS[key]
        return Input("GPU memory", int(gib * GIB), READ, f"{gpu}: {gib} GiB ({basis})")
    if gpu_memory is not None:
        return Input("GPU memory", parse_size(gpu_memory, "--gpu-memory"), GIVEN, f"--gpu-memory {gpu_memory}")
    return None


def parse_size(text: str, flag: str) -> int:
    """'80GiB', '80GB', '24G', '512MiB' or plain bytes."""
    units = {
        "": 1,
        "b": 1,
        "k": 1024,
        "kb": 1000,
        "kib": 1024,
        "m": 1024**2,
        "mb": 1000**2,
        "mib": 1024**2,
        "g": GIB,
        "gb": 1000**3,
        "gib": GIB,
        "t": 1024**4,
        "tb": 1000**4,
        "tib": 1024**4,
    }
    cleaned = text.strip().lower().replace(" ", "")
    number = cleaned.rstrip("kmgtib")
    unit = cleaned[len(number) :]
    try:
        value = float(number)
    except ValueError:
        raise PlanError(f"{flag} {text!r}: not a size (e.g. 80GiB, 24GB, 8000000000)") from None
    if unit not in units or value <= 0:
        raise PlanError(f"{flag} {text!r}: not a size (e.g. 80GiB, 24GB, 8000000000)")
    return int(value * units[unit])


def activation_bytes(shape: ModelShape, batched_tokens: int, max_num_seqs: int) -> int:
    """What vLLM's profiling run peaks at beyond the weights: one batch of hidden states and MLP
    intermediates, and float32 logits for the sequences sampled. An estimate: vLLM measures it."""
    raw = shape.raw_config
    hidden = config_int(raw, "hidden_size", "n_embd", "d_model")
    intermediate = config_int(raw, "intermediate_size", "moe_intermediate_size") or 4 * hidden
    vocab = config_int(raw, "vocab_size")
    return batched_tokens * (4 * hidden + 3 * intermediate) * 2 + max_num_seqs * vocab * 4


def from_memory(
    total: Input[int],
    utilization: Input[float],
    weights: Figure[int],
    shape: ModelShape,
    batched_tokens: int,
    max_num_seqs: int,
) -> Budget:
    activation = activation_bytes(shape, batched_tokens, max_num_seqs)
    allowance = activation + int(RUNTIME_ALLOWANCE_GIB * GIB)
    kv = int(total.value * utilization.value) - weights.value - allowance
    inputs = (
        total,
        utilization,
        Input("weights per GPU", weights.value, weights.source, weights.formula),
        Input(
            "activation + runtime allowance",
            allowance,
            ESTIMATED,
            f"profiling peak ~ {batched_tokens} batched tokens x (4 x hidden + 3 x intermediate) x 2 B "
            f"+ {max_num_seqs} x vocab x 4 B logits, + {RUNTIME_ALLOWANCE_GIB} GiB CUDA context and graphs",
        ),
    )
    figure = Figure(
        "KV cache budget per GPU",
        kv,
        "bytes",
        "GPU memory x utilization - weights per GPU - activation allowance",
        inputs,
        ESTIMATED,
    )
    if kv <= 0:
        raise PlanError(
            f"nothing is left for the KV cache: {total.value / GIB:.2f} GiB x {utilization.value} "
            f"- {weights.value / GIB:.2f} GiB weights - {allowance / GIB:.2f} GiB allowance "
            f"= {kv / GIB:.2f} GiB (quantize, add GPUs, or raise --gpu-memory-utilization)"
        )
    return Budget(kv, figure, total.value, utilization.value)


def exact(kv_bytes: Input[int]) -> Budget:
    figure = Figure("KV cache budget per GPU", kv_bytes.value, "bytes", "--kv-cache-memory-bytes", (kv_bytes,), GIVEN)
    return Budget(kv_bytes.value, figure, None, None)
