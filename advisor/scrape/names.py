"""vLLM's metric names per release (names.json, read from each release's source) and what each one measures."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from advisor.scrape.snapshot import Snapshot

# What the rules read, and the family names vLLM gave it over the releases, newest first
# (prometheus_client's family names: a counter's has no _total). Every name here is checked
# against names.json by tests/unit/test_scrape_names.py.
MEASURES: dict[str, tuple[str, ...]] = {
    "preemptions": ("vllm:num_preemptions",),
    "request_preemptions": ("vllm:request_num_preemptions",),  # per finished request, 0.30 on
    "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),  # 0..1
    "running": ("vllm:num_requests_running",),
    "waiting": ("vllm:num_requests_waiting",),
    "prefix_queries": ("vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries"),
    "prefix_hits": ("vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits"),
    "success": ("vllm:request_success",),
    "prompt_tokens": ("vllm:prompt_tokens",),
    "generation_tokens": ("vllm:generation_tokens",),
    "ttft": ("vllm:time_to_first_token_seconds",),
    "tpot": ("vllm:request_time_per_output_token_seconds", "vllm:time_per_output_token_seconds"),
    "queue_time": ("vllm:request_queue_time_seconds",),
    "e2e": ("vllm:e2e_request_latency_seconds",),
    "prefill_time": ("vllm:request_prefill_time_seconds",),
    "decode_time": ("vllm:request_decode_time_seconds",),
    "prompt_length": ("vllm:request_prompt_tokens",),
    "generation_length": ("vllm:request_generation_tokens",),
    "cache_config": ("vllm:cache_config_info", "vllm:cache_config"),
}


@cache
def table() -> dict[str, Any]:
    """{"releases": [oldest .. newest], "metrics": {family: {"type": ..., "spans": [[first, last], ...]}}}."""
    names: dict[str, Any] = json.loads(resources.files(__package__).joinpath("names.json").read_text(encoding="utf-8"))
    return names


def release_names(version: str) -> dict[str, str]:
    """{family: type} of one release."""
    order = {v: i for i, v in enumerate(table()["releases"])}
    at = order[version]
    return {
        name: entry["type"]
        for name, entry in table()["metrics"].items()
        if any(order[first] <= at <= order[last] for first, last in entry["spans"])
    }


def matching_releases(snapshot: Snapshot) -> list[str]:
    """The releases whose source defines every vllm: family of the dump that any release defines
    (families built at run time, such as the _created gauges, are in none and say nothing)."""
    known = set(table()["metrics"])
    seen = {name for name in snapshot.samples if name in known}
    return [v for v in table()["releases"] if seen <= set(release_names(v))]
