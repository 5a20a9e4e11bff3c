"""The metrics section as plain lines for the human formats: the likely bottleneck on top, what was read below."""

from __future__ import annotations

from advisor.report.contract import JoinedReport, Report

# The few figures an operator reads first, in order; the JSON has them all.
SHOWN = (
    ("preemptions", "preemptions", ""),
    ("finished", "finished", ""),
    ("kv_cache_usage_pct", "KV cache", "%"),
    ("running", "running", ""),
    ("waiting", "waiting", ""),
    ("ttft_p95_s", "TTFT p95", " s"),
    ("tpot_p50_s", "TPOT p50", " s"),
    ("queue_time_p95_s", "queue p95", " s"),
    ("prefix_hit_pct", "prefix hits", "%"),
)


def head(report: Report) -> list[str]:
    """The one likely bottleneck, for the top of the report; nothing for a log-only report."""
    if not isinstance(report, JoinedReport):
        return []
    section = report.metrics
    if section.bottleneck:
        return [f"Likely bottleneck (from /metrics): {section.bottleneck}"]
    return ["Likely bottleneck (from /metrics): none found"] if section.read else []


def tail(report: Report) -> list[str]:
    """What was read, from where and when; what could not be read; what became of the log's inferences."""
    if not isinstance(report, JoinedReport):
        return []
    section = report.metrics
    out = []
    for read in section.read:
        releases = f", names of vLLM {read.releases}" if read.releases else ""
        figures = ", ".join(
            f"{label} {read.values[name]:g}{unit}" for name, label, unit in SHOWN if name in read.values
        )
        if read.window_start:
            how = f"queried over {read.window_start} .. {read.read_at}"
        else:
            how = f"{'scraped' if read.fetched else 'dump read'} {read.read_at}"
        out.append(f"Metrics read: {read.source} ({how}{releases}): {figures}")
    out += [f"Metrics missing: {m.source}: {m.error}; the log was judged without them" for m in section.missing]
    out += [f"{s.rule} {s.outcome} by /metrics: {s.why}" for s in section.log_findings]
    return out
