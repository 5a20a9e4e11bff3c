"""vLLM's defaults that the advice depends on, read from its source, and the advisor's ceiling on them:
the one place the log rules, `plan`, /metrics and `verify` take them from."""

from __future__ import annotations

# The KV block in tokens when the launch does not say: 16 on CUDA (and the other GPUs), 128 on the CPU
# backend (engine/arg_utils.py, platforms/cpu.py).
BLOCK_SIZE = {"cpu": 128}
GPU_BLOCK_SIZE = 16
# MLA models: FlashMLA's 64 (Hopper; other MLA backends choose their own); the CPU kernel without AMX, 16.
MLA_BLOCK_SIZE = {"cpu": 16, "cuda": 64}
# --gpu-memory-utilization's default: 0.9, 0.92 from vLLM 0.21 on.
UTILIZATION_BEFORE_0_21, UTILIZATION_FROM_0_21 = 0.9, 0.92
# Never suggest more: the rest is the driver's, the graphs' and other processes' headroom.
MAX_UTILIZATION = 0.95
UTILIZATION_STEP = 0.02


def block_size(backend: str | None) -> int:
    """vLLM's default KV block on this backend (None: a GPU's)."""
    return BLOCK_SIZE.get(backend or "", GPU_BLOCK_SIZE)


def default_utilization(version: tuple[int, ...] | None) -> float:
    """The utilization vLLM of this version takes when none is given (unknown: the older default)."""
    return UTILIZATION_FROM_0_21 if version and version >= (0, 21) else UTILIZATION_BEFORE_0_21


def raised_utilization(utilization: float) -> float | None:
    """One step up, at most the ceiling; None when already there."""
    if utilization >= MAX_UTILIZATION:
        return None
    return round(min(MAX_UTILIZATION, utilization + UTILIZATION_STEP), 2)
