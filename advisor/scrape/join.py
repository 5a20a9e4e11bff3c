"""The log's report and the replicas' /metrics as one report: inferences confirmed or withdrawn, the metrics'
own findings, the verdict and the likely bottleneck."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from advisor.report.build import Diagnosis, corrected_command, finding, verdict
from advisor.report.contract import (
    Command,
    Finding,
    JoinedReport,
    MetricsMissing,
    MetricsRead,
    MetricsSection,
    Report,
    Settled,
    Verdict,
)
from advisor.rules.match import Match
from advisor.rules.render import render
from advisor.rules.schema import SEVERITY_ORDER, load_metric_rules
from advisor.scrape.figures import cache_config, deployment, figures
from advisor.scrape.names import matching_releases
from advisor.scrape.rules import judge
from advisor.scrape.snapshot import Snapshot
from advisor.timeline.events import Run

# The log's inferences that only the counter can settle: all three say "requests may be preempted".
PREEMPTION_HYPOTHESES = ("R103", "R104", "H103")
COUNTER = "vllm:num_preemptions_total"


@dataclass
class Reading:
    snapshot: Snapshot
    figures: dict[str, Any]


def join(
    diagnosis: Diagnosis | None,
    report: Report | None,
    snapshots: list[Snapshot],
    missing: list[MetricsMissing],
    user_command: str | None = None,
) -> JoinedReport:
    """One report from a log's diagnosis and report (None: metrics alone) and the snapshots read, one
    per replica. The log's matches are settled by the metrics, not made again."""
    last, matches = diagnosis.last if diagnosis is not None else (None, [])
    from_log = log_values(report, last) if report is not None else {}
    readings = [Reading(s, figures(s, from_log if _same_run(s, from_log) else None, s.earlier)) for s in snapshots]
    section = MetricsSection(read=[_read(r) for r in readings], missing=missing)

    kept, settled = _settle(matches, readings, from_log)
    section.log_findings = settled
    metric_findings = _metric_findings(readings)
    last_findings = [finding(m) for m in kept]
    confirmed = {s.rule: s.why for s in settled if s.outcome == "confirmed"}
    for match, item in zip(kept, last_findings, strict=True):
        if item.rule not in confirmed:
            continue
        # The log's evidence, confirmed: the sentence sending the operator to /metrics has been followed.
        said = render([s for s in match.rule.message if "/metrics" not in s], match.context)
        item.evidence, item.message = "confirmed", f"{said} Confirmed: {confirmed[item.rule]}"
        # Confirmed, a full cache (R104) or one snapshot of pressure (H103) is preemption, as R103 is.
        item.phase, item.failure = "runtime", "preemption"
        item.severity = "warning" if item.severity == "info" else item.severity
    earlier = report.findings[len(matches) :] if report is not None else []

    base = (
        report
        if report is not None
        else Report(
            source=", ".join(s.source for s in snapshots) or "metrics", verdict=Verdict(phase="unknown", failure="none")
        )
    )
    joined = JoinedReport(**{f.name: getattr(base, f.name) for f in fields(base)}, metrics=section)
    joined.events = base.events if report is not None else []
    joined.findings = last_findings + metric_findings + earlier
    joined.verdict, joined.command = _verdict_and_command(
        report, last, kept, last_findings, metric_findings, snapshots, user_command
    )
    failing = [f for f in metric_findings if f.severity != "info"]
    section.bottleneck = _bottleneck(failing[0]) if failing else None
    return joined


def log_values(report: Report, last: Run | None) -> dict[str, Any]:
    """The log's numbers the metric rules also read: its facts, the peak of running requests, and the
    generation throughput its stats lines show while requests run."""
    values: dict[str, Any] = dict(report.facts)
    if last is not None and last.peak_running_reqs is not None:
        values["peak_running_reqs"] = last.peak_running_reqs
    busy = [
        e.values["generation_throughput"]
        for e in report.events
        if e.kind == "stats" and e.values.get("running_reqs") and "generation_throughput" in e.values
    ]
    if busy:
        values["log_generation_tok_s"] = round(sum(busy) / len(busy), 1)
        values["log_busy_stats_lines"] = len(busy)
    return values


def _same_run(snapshot: Snapshot, log_values: dict[str, Any]) -> bool:
    """Whether the dump can be of the log's server: the KV cache size both state must agree."""
    if not log_values:
        return False
    mine = cache_config(snapshot).get("kv_cache_tokens")
    theirs = log_values.get("kv_cache_tokens")
    return mine is None or theirs is None or int(mine) == int(theirs)


def _read(reading: Reading) -> MetricsRead:
    releases = matching_releases(reading.snapshot)
    span = None if not releases else releases[0] if len(releases) == 1 else f"{releases[0]} - {releases[-1]}"
    values: dict[str, int | float | str | bool] = {
        k: v for k, v in reading.figures.items() if isinstance(v, (int, float, bool)) and not isinstance(v, str)
    }
    return MetricsRead(
        source=reading.snapshot.source,
        read_at=reading.snapshot.read_at.isoformat(timespec="seconds"),
        fetched=reading.snapshot.fetched,
        window_start=earlier.read_at.isoformat(timespec="seconds") if (earlier := reading.snapshot.earlier) else None,
        releases=span,
        values=values,
    )


def _settle(
    matches: list[Match], readings: list[Reading], log_values: dict[str, Any]
) -> tuple[list[Match], list[Settled]]:
    """The log's preemption inferences confirmed by a counter above 0, withdrawn by 0 on the same server."""
    hypotheses = [m for m in matches if m.rule.code in PREEMPTION_HYPOTHESES]
    if not hypotheses:
        return matches, []
    same = [r for r in readings if _same_run(r.snapshot, log_values) and "preemptions" in r.figures]
    if not same:
        why = ("the metrics lack " + COUNTER) if readings else "no metrics could be read"
        if readings and not any(_same_run(r.snapshot, log_values) for r in readings):
            why = "the metrics are of another server (their KV cache size differs from the log's)"
        return matches, [Settled(rule=m.rule.code, outcome="unsettled", why=why) for m in hypotheses]
    counted = [(r.figures["preemptions"], r.snapshot.source) for r in same]
    preempted = [(n, source) for n, source in counted if n > 0]
    if preempted:
        why = "; ".join(f"{COUNTER} = {n:g} on {source}" for n, source in preempted) + "."
        return matches, [Settled(rule=m.rule.code, outcome="confirmed", why=why) for m in hypotheses]
    why = (
        f"{COUNTER} is 0 on "
        + ", ".join(source for _, source in counted)
        + ", the same server as the log (same KV cache size): nothing was preempted."
    )
    withdrawn = {m.rule.code for m in hypotheses}
    return (
        [m for m in matches if m.rule.code not in withdrawn],
        [Settled(rule=code, outcome="withdrawn", why=why) for code in sorted(withdrawn)],
    )


def _metric_findings(readings: list[Reading]) -> list[Finding]:
    several = len(readings) > 1
    found = [pair for r in readings for pair in judge(r.figures, "replica", r.snapshot.source if several else None)]
    if several:
        context = deployment([(r.snapshot.source, r.figures) for r in readings])
        found += judge(context, "deployment")
    order = {rule.code: index for index, (rule, _) in enumerate(found)}
    return [f for _, f in sorted(found, key=lambda pair: (SEVERITY_ORDER[pair[0].severity], order[pair[0].code]))]


def _verdict_and_command(
    report: Report | None,
    last: Run | None,
    kept: list[Match],
    last_findings: list[Finding],
    metric_findings: list[Finding],
    snapshots: list[Snapshot],
    user_command: str | None,
) -> tuple[Verdict, Command]:
    if report is not None and report.verdict.phase == "startup":  # the metrics cannot undo a start that failed
        return report.verdict, report.command
    logged = verdict(last, kept) if last is not None else None
    failing = [f for f in last_findings + metric_findings if f.severity != "info" and f.failure != "none"]
    if failing:
        top = failing[0]
        return (
            Verdict(phase=top.phase, failure=top.failure, rule=top.rule, line=top.line),
            corrected_command(last, [top], user_command),
        )
    if logged is not None:
        return logged, corrected_command(last, last_findings or metric_findings, user_command)
    phase: Literal["healthy", "unknown"] = "healthy" if snapshots else "unknown"
    return Verdict(phase=phase, failure="none"), corrected_command(None, metric_findings[:1], user_command)


def _bottleneck(top: Finding) -> str:
    rule = next(r for r in load_metric_rules() if r.code == top.rule)
    return f"{rule.bottleneck} ({top.rule} {top.name})"
