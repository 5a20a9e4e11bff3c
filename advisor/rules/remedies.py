"""Remedies: the arithmetic behind each suggestion, computed from the log's own numbers."""

from __future__ import annotations

import math
import re
from typing import Any

from advisor.defaults import GPU_BLOCK_SIZE, MAX_UTILIZATION, block_size, default_utilization, raised_utilization

GIB = 2**30
# GiB figures are printed with two decimals; below this they are too rounded to divide by.
MIN_TRUSTED_GIB = 0.1
# No model has more attention heads; a crafted count must not make the divisor search run for hours.
MAX_HEADS = 4096
# What a backend's memory, tools and parallel units are called, for the rules' wording.
BACKEND_WORDS = {
    "cuda": {
        "memory_place": "the device",
        "process_tool": "nvidia-smi",
        "parallel_units": "GPUs",
        "headroom_users": "CUDA graphs, the driver and other processes",
    },
    "rocm": {
        "memory_place": "the device",
        "process_tool": "rocm-smi",
        "parallel_units": "GPUs",
        "headroom_users": "HIP graphs, the driver and other processes",
    },
    "cpu": {
        "memory_place": "the node",
        "process_tool": "top, ps or numastat",
        "parallel_units": "NUMA nodes",
        "headroom_users": "the operating system and other processes",
    },
    "xpu": {
        "memory_place": "the XPU",
        "process_tool": "xpu-smi",
        "parallel_units": "XPUs",
        "headroom_users": "the driver and other processes",
    },
    "hpu": {
        "memory_place": "the HPU",
        "process_tool": "hl-smi",
        "parallel_units": "HPUs",
        "headroom_users": "HPU graphs, the driver and other processes",
    },
    "tpu": {
        "memory_place": "the TPU",
        "process_tool": "tpu-info",
        "parallel_units": "TPU chips",
        "headroom_users": "XLA and other processes",
    },
    "npu": {
        "memory_place": "the NPU",
        "process_tool": "npu-smi",
        "parallel_units": "NPUs",
        "headroom_users": "the driver and other processes",
    },
}
# `--max-model-len auto` (auto-fit, PR #29431, merged 2025-11-25) ships from this release on.
AUTO_FIT_SINCE = (0, 13)

# The names arithmetic() may derive: rule texts, flags and remediation conditions read them; a rule's
# firing condition may not (it is judged before any arithmetic is done), and load_rules says so.
DERIVED_NAMES = frozenset(
    {
        "auto_fit_supported",
        "concurrency_at_suggested",
        "cpu_nodes_seen",
        "default_utilization",
        "derived_max_model_len",
        "doubled_kv_cache_memory_bytes",
        "doubled_swap_space",
        "doubled_tp",
        "free_fraction",
        "full_length_requests",
        "half_max_len",
        "halved_max_num_seqs",
        "headroom_users",
        "kv_block_tokens",
        "kv_bytes_per_token",
        "kv_bytes_that_fit",
        "kv_cache_memory_bytes_needed",
        "kv_needed_for_max_len_gib",
        "least_free_gpu_gib",
        "least_total_gpu_gib",
        "lower_utilization",
        "max_safe_utilization",
        "memory_place",
        "model_kv_budget_bytes",
        "model_kv_budget_requests",
        "next_port",
        "next_utilization",
        "parallel_units",
        "process_tool",
        "requested_max_len",
        "suggested_max_model_len",
        "suggested_share_pct",
        "suggested_tp",
        "suggested_utilization",
        "tokens_that_fit",
        "tp_within_nodes",
        "utilization_cap",
        "utilization_needed",
        "valid_tp_sizes",
    }
)


def round_length(limit: float, block: int = GPU_BLOCK_SIZE) -> int:
    """A round max-model-len between 60% and 80% of `limit`: a multiple of 1024 where possible, and at
    least one KV block below it (vLLM keeps one block as the null block; its auto-fit forgets it,
    PR 48724). 0 when not even that fits."""
    ceiling = limit - block
    for step in (1024, 512, 256, 128, 64, 16, 1):
        value = int(min(int(limit * 0.8), ceiling)) // step * step
        if value >= limit * 0.6 and value > 0:
            return value
    return max(0, int(min(limit * 0.8, ceiling)))


def cpu_nodes_seen(v: dict[str, Any], limit: float) -> int:
    """NUMA nodes the log shows: the allowed ones vLLM listed, else the highest node index + 1, else 1."""
    if v.get("numa_nodes"):
        return int(min(v["numa_nodes"], limit))
    node = v.get("numa_node")
    return int(node) + 1 if isinstance(node, (int, float)) and 0 <= node < limit else 1


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    match = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(match[1]), int(match[2])) if match else None


def arithmetic(v: dict[str, Any]) -> dict[str, Any]:  # noqa: C901  (each figure guarded by what it needs)
    """Derived quantities for rule templates and flag values; each appears only when computable."""
    out: dict[str, Any] = {}
    max_len = v.get("max_seq_len")
    needed, available = v.get("kv_needed_gib"), v.get("kv_available_gib")
    budget = v.get("kv_cache_memory_bytes")

    bytes_per_token = None
    if needed and needed >= MIN_TRUSTED_GIB and max_len:
        bytes_per_token = needed * GIB / max_len
    elif budget and v.get("estimated_max_model_len"):
        bytes_per_token = budget / v["estimated_max_model_len"]
    elif budget and v.get("kv_cache_tokens"):
        bytes_per_token = budget / v["kv_cache_tokens"]
    elif available and available >= MIN_TRUSTED_GIB and v.get("max_tokens_in_kv_cache"):
        bytes_per_token = available * GIB / v["max_tokens_in_kv_cache"]
    if bytes_per_token:
        out["kv_bytes_per_token"] = round(bytes_per_token)

    token_limit = v.get("estimated_max_model_len") or v.get("max_tokens_in_kv_cache") or 0
    if not token_limit and bytes_per_token and available and available >= MIN_TRUSTED_GIB:
        token_limit = int(available * GIB / bytes_per_token)
    block = v.get("block_size") or block_size(v.get("backend"))
    out["kv_block_tokens"] = block
    suggested = round_length(token_limit, block) if token_limit else 0
    if token_limit:
        out["tokens_that_fit"] = int(token_limit)
    if suggested:
        out["suggested_max_model_len"] = suggested
        out["suggested_share_pct"] = round(100 * suggested / token_limit)
        out["concurrency_at_suggested"] = round(token_limit / suggested, 2)

    if bytes_per_token and max_len:
        needed_bytes = bytes_per_token * max_len
        out["kv_needed_for_max_len_gib"] = round(needed_bytes / GIB, 2)
        # 10% margin over the bare need, rounded up to a whole MiB.
        out["kv_cache_memory_bytes_needed"] = math.ceil(needed_bytes * 1.1 / 2**20) * 2**20

    utilization, total = v.get("gpu_memory_utilization"), v.get("total_gpu_gib")
    if not utilization and not v.get("kv_cache_memory_bytes"):
        # Not in the log: assume vLLM's default for its version and say so.
        utilization = out["default_utilization"] = default_utilization(version_tuple(v.get("vllm_version")))
    if utilization:
        if raised := raised_utilization(utilization):
            out["next_utilization"] = raised
        out["lower_utilization"] = round(max(0.5, utilization - 0.05), 2)
        if total and needed is not None and available is not None and needed >= MIN_TRUSTED_GIB:
            out["utilization_needed"] = math.ceil((utilization + (needed - available) / total) * 100) / 100
        elif total and available and available >= MIN_TRUSTED_GIB and v.get("max_tokens_in_kv_cache") and max_len:
            shortfall = available * (max_len / v["max_tokens_in_kv_cache"] - 1)
            out["utilization_needed"] = math.ceil((utilization + shortfall / total) * 100) / 100
        step = out.get("utilization_needed") or out.get("next_utilization")
        if step and step <= MAX_UTILIZATION:
            out["suggested_utilization"] = step
    free = v.get("free_gpu_gib")
    if free and v.get("kv_requested_gib"):  # 90% of what was free, in whole MiB
        out["kv_bytes_that_fit"] = math.floor(free * GIB * 0.9 / 2**20) * 2**20
    per_request, block_bytes = v.get("model_kv_bytes_per_request"), v.get("model_kv_block_bytes")
    if per_request and block_bytes:
        # From the model's own config: the KV cache a full batch of full-length requests takes, the null
        # block included, but no more than 90% of what was free; whole MiB.
        seqs = int(v.get("arg_max_num_seqs") or v.get("model_max_num_seqs") or 1)
        requests = min(seqs, int((free * GIB * 0.9 - block_bytes) // per_request)) if free else seqs
        if requests >= 1:
            out["model_kv_budget_requests"] = requests
            out["model_kv_budget_bytes"] = math.ceil((requests * per_request + block_bytes) / 2**20) * 2**20
    if free is not None and total:
        out["free_fraction"] = round(free / total, 3)
        least_free = out["least_free_gpu_gib"] = v.get("least_free_gpu_gib", free)
        least_total = out["least_total_gpu_gib"] = v.get("least_total_gpu_gib", total)
        out["max_safe_utilization"] = min(MAX_UTILIZATION, math.floor(least_free / least_total * 100) / 100)

    heads, tp = v.get("num_attention_heads"), v.get("tensor_parallel_size")
    if heads and heads <= MAX_HEADS:  # the divisor search is linear in the head count
        divisors = [d for d in range(1, int(heads) + 1) if heads % d == 0]
        out["valid_tp_sizes"] = ", ".join(map(str, divisors))
        below = [d for d in divisors if d <= (tp or heads) and d & (d - 1) == 0]
        if v.get("backend") == "cpu":  # one rank per NUMA node: no more ranks than the nodes the log shows
            nodes = out["cpu_nodes_seen"] = cpu_nodes_seen(v, heads)
            below = [d for d in below if d <= nodes]
        out["suggested_tp"] = max(below) if below else 1
    if v.get("numa_nodes"):  # the CPU backend said how many nodes it may bind workers to
        nodes = int(min(v["numa_nodes"], MAX_HEADS))
        fitting = [d for d in range(1, nodes + 1) if not heads or heads > MAX_HEADS or heads % d == 0]
        out["tp_within_nodes"] = max(fitting)
    out["doubled_tp"] = 2 * int(tp or 1)

    concurrency = v.get("max_concurrency")
    if concurrency:
        out["full_length_requests"] = max(1, math.floor(concurrency))
    peak = v.get("peak_running_reqs")
    if peak:
        out["halved_max_num_seqs"] = max(1, int(peak) // 2)
    budget_now = v.get("kv_cache_memory_bytes")
    if budget_now:
        out["doubled_kv_cache_memory_bytes"] = int(budget_now) * 2
    requested = v.get("requested_tokens") or v.get("long_prompt_tokens")
    if requested:
        out["requested_max_len"] = math.ceil(requested / 1024) * 1024
    swap = v.get("swap_space_gib")
    out["doubled_swap_space"] = int(swap * 2) if swap else 8
    port = v.get("arg_port")
    if isinstance(port, int):
        out["next_port"] = port + 1
    if max_len and concurrency:
        half = round_length(max_len * 0.5 / 0.8)  # about half, rounded like the others
        # Offered only where it fits: below 0.5x, half the length is still more than the cache holds.
        if half < concurrency * max_len:
            out["half_max_len"] = half
    derived = v.get("derived_max_model_len")
    if derived:
        out["derived_max_model_len"] = int(derived)
    version = version_tuple(v.get("vllm_version"))
    out["auto_fit_supported"] = bool(version and version >= AUTO_FIT_SINCE)
    # Each backend's own words: the CPU backend's memory is a NUMA node's, and other processes show
    # in top, not nvidia-smi; an XPU, HPU, TPU or NPU has its own tool and its own name.
    words = BACKEND_WORDS.get(v.get("backend") or "", BACKEND_WORDS["cuda"])
    out["memory_place"], out["process_tool"] = words["memory_place"], words["process_tool"]
    out["parallel_units"], out["headroom_users"] = words["parallel_units"], words["headroom_users"]
    node = v.get("numa_node")
    if v.get("backend") == "cpu" and isinstance(node, (int, float)) and math.isfinite(node):
        out["memory_place"] = f"NUMA node {int(node)}"
    # The highest utilization worth suggesting here: the ceiling, and no more than what is free.
    out["utilization_cap"] = min(MAX_UTILIZATION, out.get("max_safe_utilization", MAX_UTILIZATION))
    return out
