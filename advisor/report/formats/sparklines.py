"""The run at a glance: sparklines of the periodic stats lines, with the findings' moments marked."""

from __future__ import annotations

from advisor.report.contract import EventOut, Finding, Report

BARS = "▁▂▃▄▅▆▇█"
# Label, stats value, unit, fixed top of the scale (None: the series' own maximum).
SERIES = (
    ("KV cache", "kv_cache_usage_pct", "%", 100.0),
    ("running", "running_reqs", " reqs", None),
    ("waiting", "waiting_reqs", " reqs", None),
    ("gen tok/s", "generation_throughput", "", None),
)
# 2 indent + 10 label + 1 + columns + 1 + range (at most 16): 80 columns.
MAX_COLUMNS = 50
LABEL_WIDTH = 10
MARK = "▲"
# Findings that happen at a moment of the run: preemption, saturation, failure; not static advice.
MARKED_SEVERITIES = ("error", "warning")


def stats_events(report: Report) -> list[EventOut]:
    return [event for event in report.events if event.kind == "stats"]


def lines(report: Report) -> list[str]:
    """The timeline as plain lines, or nothing when the log has fewer than two stats lines."""
    events = stats_events(report)
    if len(events) < 2:
        return []
    buckets = bucketed(events)
    out = [
        f"Run at a glance: {len(events)} stats lines, log lines {events[0].line}-{events[-1].line}"
        + (f", {len(events) / len(buckets):.3g} per column" if len(buckets) < len(events) else "")
    ]
    for label, name, unit, top in SERIES:
        values = [max((e.values[name] for e in bucket if name in e.values), default=None) for bucket in buckets]
        present = [v for v in values if v is not None]
        if not present:
            continue
        scale = top if top is not None else max(present)
        low, high = number(min(present)), number(max(present))
        span = high if low == high else f"{low}-{high}"
        out.append(f"  {label:<{LABEL_WIDTH}} {sparkline(values, scale)} {span}{unit}")
    marked = [
        f for f in report.findings if f.phase == "runtime" and f.severity in MARKED_SEVERITIES and f.line is not None
    ]
    if marked:
        out.append(f"  {'':<{LABEL_WIDTH}} {marks(buckets, marked)}")
        out += [f"  {MARK} line {f.line}: {f.rule} {f.name} ({f.failure})" for f in marked]
    return out


def bucketed(events: list[EventOut]) -> list[list[EventOut]]:
    """At most MAX_COLUMNS columns; a column holds consecutive stats lines and shows their peak."""
    columns = min(len(events), MAX_COLUMNS)
    return [events[index * len(events) // columns : (index + 1) * len(events) // columns] for index in range(columns)]


def sparkline(values: list[float | None], scale: float) -> str:
    # The lowest bar means zero, so an idle moment never looks like a small load.
    def bar(value: float | None) -> str:
        if value is None:
            return " "
        if value <= 0 or scale <= 0:
            return BARS[0]
        return BARS[1 + min(len(BARS) - 2, round(value / scale * (len(BARS) - 2)))]

    return "".join(bar(value) for value in values)


def marks(buckets: list[list[EventOut]], findings: list[Finding]) -> str:
    """A mark under the first column at or after each finding's line; after the last one if later."""
    row = [" "] * (len(buckets) + 1)
    for finding in findings:
        line = finding.line or 0  # the marked findings are the log's, which have a line
        column = next((i for i, bucket in enumerate(buckets) if bucket[-1].line >= line), len(buckets))
        row[column] = MARK
    return "".join(row).rstrip()


def number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 or value == int(value) else f"{value:.1f}"
