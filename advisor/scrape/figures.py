"""The numbers the metric rules read, worked out from one replica's snapshot (and the log's facts when given)."""

from __future__ import annotations

import math
from typing import Any

from advisor.defaults import raised_utilization
from advisor.scrape.names import MEASURES
from advisor.scrape.preemption import recomputed, spread
from advisor.scrape.snapshot import Histogram, Snapshot

# Finish reasons that are not a normal end (stop, length, repetition): the server or the client gave up.
FAILED_REASONS = ("error", "abort")


def figures(snapshot: Snapshot, log: dict[str, Any] | None = None, previous: Snapshot | None = None) -> dict[str, Any]:  # noqa: C901  (each figure guarded by what the dump has)
    """Named numbers for the rules; a name is absent when the dump cannot give it (never divided by 0).

    With the previous snapshot of the same server (follow's last poll, or a Prometheus window's start), the
    counters and histograms count what happened in between, and the tokens per second are over it."""
    s, out = snapshot, dict[str, Any]()
    put(out, "preemptions", window_total(s, previous, "preemptions"))
    if previous is not None:
        put(out, "preemptions_total", s.total(MEASURES["preemptions"]))
    usage = s.total(MEASURES["kv_cache_usage"])
    put(out, "kv_cache_usage_pct", None if usage is None else round(100 * usage, 1))
    put(out, "running", s.total(MEASURES["running"]))
    put(out, "waiting", s.total(MEASURES["waiting"]))

    reasons = window_by_label(s, previous, "success", "finished_reason")
    finished = sum(reasons.values())
    if reasons:
        out["finished"] = finished
        out["finished_by_reason"] = ", ".join(f"{k} {v:g}" for k, v in sorted(reasons.items()) if v) or "none"
        failed = sum(reasons.get(reason, 0.0) for reason in FAILED_REASONS)
        out["failed_requests"] = failed
        out["failed_by_reason"] = ", ".join(f"{r} {reasons[r]:g}" for r in FAILED_REASONS if reasons.get(r))
        if finished:
            out["failed_pct"] = round(100 * failed / finished, 1)
    if finished and "preemptions" in out:
        out["preemptions_per_request"] = round(out["preemptions"] / finished, 2)

    queries, hits = window_total(s, previous, "prefix_queries"), window_total(s, previous, "prefix_hits")
    if queries:
        out["prefix_queries"] = queries
        out["prefix_hit_pct"] = round(100 * (hits or 0.0) / queries, 1)

    def observed(name: str) -> Histogram | None:  # over the interval, when there was a poll before
        now = s.histogram(MEASURES[name])
        return None if now is None else now.since(previous.histogram(MEASURES[name]) if previous else None)

    for name in ("ttft", "tpot", "queue_time", "e2e"):
        latency(out, name, observed(name))
    for name in ("prefill_time", "decode_time"):
        histogram = observed(name)
        put(out, f"{name}_mean_s", None if histogram is None else rounded(histogram.mean))
    for name in ("prompt_length", "generation_length"):
        histogram = observed(name)
        put(out, f"mean_{name}", None if histogram is None or histogram.mean is None else round(histogram.mean))
    prompt, generated = (window_total(s, previous, name) for name in ("prompt_tokens", "generation_tokens"))
    if prompt is not None and generated is not None:
        out["tokens_computed"] = prompt + generated
    if out.get("preemptions"):
        out.update(spread(observed("request_preemptions")))
        out.update(recomputed(out))
    if out.get("queue_time_mean_s") is not None and out.get("e2e_mean_s"):
        out["queue_share_pct"] = round(100 * out["queue_time_mean_s"] / out["e2e_mean_s"], 1)

    cache = cache_config(s)
    put(out, "kv_cache_tokens", cache.get("kv_cache_tokens") or (log or {}).get("kv_cache_tokens"))
    if cache.get("enable_prefix_caching") is not None:
        out["prefix_caching"] = cache["enable_prefix_caching"]
    for name in ("kv_cache_memory_bytes", "gpu_memory_utilization"):
        put(out, name, cache.get(name))
    request = (out.get("mean_prompt_length") or 0) + (out.get("mean_generation_length") or 0)
    if request and out.get("kv_cache_tokens"):
        out["mean_request_tokens"] = request
        out["requests_that_fit"] = int(out["kv_cache_tokens"] // request)

    # A rate needs a window the evidence covers: two polls of follow, or the log's stats lines. One scrape
    # gives counts only: its counters' lifetimes include every idle hour since the server started.
    interval = (s.read_at - previous.read_at).total_seconds() if previous is not None else 0.0
    grown = change(previous, s, "generation_tokens") if previous is not None else None
    if interval > 0 and grown is not None:
        out["rate_window_s"] = round(interval, 1)
        out["generation_tok_s"] = round(grown / interval, 1)
    elif log and log.get("log_generation_tok_s") is not None:  # the stats lines' own figure, while busy
        out["generation_tok_s"] = log["log_generation_tok_s"]
        out["rate_window_s"] = 10 * log["log_busy_stats_lines"]  # vLLM logs stats every 10 s
    if log:
        for name in ("max_num_seqs", "peak_running_reqs"):
            put(out, name, log.get(name))
    out.update(derived(out))
    return out


def derived(v: dict[str, Any]) -> dict[str, Any]:
    """The flag values the rules suggest, each only when its inputs are known."""
    out: dict[str, Any] = {}
    if v.get("max_num_seqs") and v["max_num_seqs"] > 1:
        out["halved_max_num_seqs"] = int(v["max_num_seqs"] // 2)
    if v.get("kv_cache_memory_bytes"):
        out["doubled_kv_cache_memory_bytes"] = int(2 * v["kv_cache_memory_bytes"])
        if v.get("mean_request_tokens") and v.get("kv_cache_tokens"):
            out["doubled_requests_that_fit"] = int(2 * v["kv_cache_tokens"] // v["mean_request_tokens"])
    elif v.get("gpu_memory_utilization") and (raised := raised_utilization(v["gpu_memory_utilization"])):
        out["next_utilization"] = raised
    if v.get("mean_prompt_length", 0) > 2048:
        out["prompt_chunk"] = int(math.ceil(v["mean_prompt_length"] / 1024) * 1024)
    concurrency = max(v.get("running") or 0, v.get("peak_running_reqs") or 0)
    if concurrency:
        out["concurrency"] = int(concurrency)
        if concurrency >= 2:
            out["halved_concurrency"] = int(concurrency // 2)
    if v.get("tpot_p50_s"):
        out["stream_tok_s"] = round(1 / v["tpot_p50_s"], 1)
    return out


def deployment(per_replica: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """What the replica-imbalance rule reads: the busiest and idlest replica by finished requests."""
    out: dict[str, Any] = {"replicas": len(per_replica)}
    finished = [(v.get("finished"), source) for source, v in per_replica if v.get("finished") is not None]
    if len(finished) >= 2:
        (low, idlest), (high, busiest) = min(finished), max(finished)
        out.update(busiest=busiest, busiest_finished=high, idlest=idlest, idlest_finished=low)
    flight = [((v.get("running") or 0) + (v.get("waiting") or 0), source) for source, v in per_replica]
    if len(flight) >= 2:
        out["busiest_in_flight"], out["idlest_in_flight"] = max(flight)[0], min(flight)[0]
        out["in_flight"] = ", ".join(f"{source} {count:g}" for count, source in flight)
    return out


def window_total(now: Snapshot, previous: Snapshot | None, measure: str) -> float | None:
    """A counter over the window: what it grew since the previous snapshot, or its whole count when there is
    none, the previous lacks it (the series began inside the window) or it went back (a restart)."""
    total = now.total(MEASURES[measure])
    before = previous.total(MEASURES[measure]) if previous is not None else None
    return total if total is None or before is None or before > total else total - before


def window_by_label(now: Snapshot, previous: Snapshot | None, measure: str, label: str) -> dict[str, float]:
    """A counter's growth over the window per value of one label, as window_total."""
    counts = now.by_label(MEASURES[measure], label)
    before = previous.by_label(MEASURES[measure], label) if previous is not None else {}
    if any(before.get(key, 0.0) > value for key, value in counts.items()):
        return counts
    return {key: value - before.get(key, 0.0) for key, value in counts.items()}


def change(before: Snapshot, after: Snapshot, measure: str) -> float | None:
    """How much a counter grew between two polls; None when either lacks it or it went back (a restart)."""
    old, new = before.total(MEASURES[measure]), after.total(MEASURES[measure])
    return None if old is None or new is None or new < old else new - old


def latency(out: dict[str, Any], name: str, histogram: Histogram | None) -> None:
    if histogram is None or not histogram.count:
        return
    out[f"{name}_count"] = histogram.count
    put(out, f"{name}_mean_s", rounded(histogram.mean))
    put(out, f"{name}_p50_s", rounded(histogram.quantile(0.5)))
    put(out, f"{name}_p95_s", rounded(histogram.quantile(0.95)))


def cache_config(snapshot: Snapshot) -> dict[str, Any]:
    """The KV cache size and prefix caching switch from vllm:cache_config_info's labels (first engine)."""
    name = snapshot.family(MEASURES["cache_config"])
    labels = next((s.labels for s in snapshot.samples.get(name, [])), {}) if name else {}
    out: dict[str, Any] = {}
    tokens = number(labels.get("kv_cache_size_tokens"))
    blocks, block = number(labels.get("num_gpu_blocks")), number(labels.get("block_size"))
    engines = max(1, len(snapshot.label_values(MEASURES["running"], "engine")))
    if tokens is None and blocks and block:
        tokens = blocks * block
    if tokens:
        out["kv_cache_tokens"] = int(tokens * engines)
    budget, utilization = number(labels.get("kv_cache_memory_bytes")), number(labels.get("gpu_memory_utilization"))
    if budget:
        out["kv_cache_memory_bytes"] = int(budget)
    if utilization:
        out["gpu_memory_utilization"] = utilization
    if labels.get("enable_prefix_caching") in ("True", "False"):
        out["enable_prefix_caching"] = labels["enable_prefix_caching"] == "True"
    return out


def number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def put(out: dict[str, Any], name: str, value: Any) -> None:
    if value is not None and not (isinstance(value, float) and not math.isfinite(value)):
        out[name] = value


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
