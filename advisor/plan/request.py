"""What a plan is asked: the model, the device, the flags given (None: vLLM's default), checked."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.plan import arithmetic
from advisor.plan.figures import PlanError

KERNEL_ALIGNMENT = {"cpu": 32, "cuda": 16}  # the attention backends' smallest kernel block (MultipleOf)
CPU_FLAGS_READ = ("avx512_bf16", "amx_tile")  # the CPU flags that change vLLM's KV layout on --device cpu


@dataclass
class Request:
    """What the user asked for; None means vLLM's default."""

    model_dir: str
    gpu_memory: str | None = None
    gpu: str | None = None
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    utilization: float | None = None
    kv_cache_dtype: str = "auto"
    kv_cache_memory_bytes: int | None = None
    block_size: int | None = None
    max_num_batched_tokens: int | None = None
    device: str = "cuda"
    # The serving machine's CPU flags, as /proc/cpuinfo lists them: vLLM's CPU kernels choose by them.
    cpu_flags: frozenset[str] = frozenset()


def check(request: Request) -> None:
    for name, value in (
        ("--tensor-parallel-size", request.tensor_parallel),
        ("--pipeline-parallel-size", request.pipeline_parallel),
        ("--max-model-len", request.max_model_len),
        ("--max-num-seqs", request.max_num_seqs),
        ("--block-size", request.block_size),
        ("--max-num-batched-tokens", request.max_num_batched_tokens),
        ("--kv-cache-memory-bytes", request.kv_cache_memory_bytes),
    ):
        if value is not None and value <= 0:
            raise PlanError(f"{name} {value}: must be a positive whole number")
    if request.utilization is not None and not 0 < request.utilization <= 1:
        raise PlanError(f"--gpu-memory-utilization {request.utilization}: must be in (0, 1]")
    if request.kv_cache_dtype != "auto" and request.kv_cache_dtype not in arithmetic.DTYPE_BYTES:
        raise PlanError(
            f"--kv-cache-dtype {request.kv_cache_dtype!r}: plan knows auto, {', '.join(arithmetic.DTYPE_BYTES)}"
        )
    if request.device not in KERNEL_ALIGNMENT:
        raise PlanError(f"--device {request.device!r}: plan knows cuda and cpu")
    if request.kv_cache_memory_bytes is None and request.gpu_memory is None and request.gpu is None:
        raise PlanError("give the GPU's memory (--gpu-memory 80GiB or --gpu NAME) or a fixed --kv-cache-memory-bytes")
