"""The model's own KV figures at a logged run's settings, for the diagnosis of that run's log."""

from __future__ import annotations

from advisor.plan import arithmetic
from advisor.plan.figures import PlanError
from advisor.plan.model import ModelShape
from advisor.plan.request import Request
from advisor.plan.settings import batch_limits, settings_for


def kv_figures(
    shape: ModelShape,
    *,
    device: str,
    max_model_len: int,
    tensor_parallel: int = 1,
    kv_cache_dtype: str = "auto",
    block_size: int | None = None,
    max_num_seqs: int | None = None,
) -> dict[str, int]:
    """Bytes per token, per full-length request and per block (the null block's cost), and the
    --max-num-seqs vLLM takes; {} when plan cannot model these settings."""
    request = Request(
        model_dir=str(shape.path),
        device=device,
        tensor_parallel=tensor_parallel,
        max_model_len=max_model_len,
        kv_cache_dtype=kv_cache_dtype if kv_cache_dtype in arithmetic.DTYPE_BYTES else "auto",
        block_size=block_size,
        max_num_seqs=max_num_seqs,
    )
    try:
        settings = settings_for(request, shape, None, max_model_len, [])
        layout = arithmetic.layout(shape, settings)
    except (PlanError, ValueError, ZeroDivisionError):
        return {}
    return {
        "model_kv_bytes_per_token": layout.per_token_bytes,
        "model_kv_bytes_per_request": layout.bytes_per_block * layout.blocks_per_request(max_model_len, settings),
        "model_kv_block_bytes": layout.bytes_per_block,
        "model_max_num_seqs": batch_limits(request, None, max_model_len)[0],
    }
