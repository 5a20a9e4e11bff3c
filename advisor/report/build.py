"""The analysis that fills the report from facts: runs, rule matches, findings, verdict, command."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from advisor import command
from advisor.ingest.sources import Line
from advisor.parse import records
from advisor.parse.continuation import continued_facts
from advisor.parse.facts import Fact, Number
from advisor.parse.grammar import parse_line
from advisor.parse.limits import bounded_tracebacks
from advisor.report.contract import Command, EventOut, Evidence, Finding, RemediationOut, Report, Verdict
from advisor.rules.match import Match, match_run
from advisor.rules.render import flag_values, render
from advisor.rules.schema import Judged, Remediation, load_rules
from advisor.timeline.events import Run
from advisor.timeline.kinds import TRACEBACK_KINDS
from advisor.timeline.runs import split_runs

if TYPE_CHECKING:
    from advisor.plan.model import ModelShape


def parse(lines: Iterable[Line]) -> list[Fact]:
    """Every fact of every line, in order (but the middle of a runaway traceback); the log's first
    vLLM record among them when no message says it is vLLM's."""
    head: list[Line] = []

    def keeping_head(lines: Iterable[Line]) -> Iterator[Line]:
        for line in lines:
            if len(head) < records.HEAD_LINES:
                head.append(line)
            yield line

    found = list(bounded_tracebacks(continued_facts(keeping_head(lines), parse_line)))
    return records.with_head(found, iter(head))


def analyze(
    lines: Iterable[Line], source: str, user_command: str | None = None, model: ModelShape | None = None
) -> Report:
    """Lines -> facts -> runs -> findings -> the report, last run first."""
    return build_report(parse(lines), source, user_command, model)


def build_report(
    facts: list[Fact], source: str, user_command: str | None = None, model: ModelShape | None = None
) -> Report:
    return with_events(diagnose(facts, source, user_command, model).report, facts)


def event_facts(facts: list[Fact]) -> list[Fact]:
    """The facts that the report lists as its events: all but the lines of tracebacks."""
    return [fact for fact in facts if fact.kind not in TRACEBACK_KINDS]


def with_events(report: Report, facts: list[Fact]) -> Report:
    """The report with its events, one per event fact."""
    events = [EventOut(line=f.line, kind=f.kind, values=f.values) for f in event_facts(facts)]
    return replace(report, events=events)


@dataclass
class Diagnosis:
    """What the analysis of a log decided: its runs, each run's rule matches (made with the model
    when its folder was given), and the report without its events. `--metrics` settles the last
    run's matches; it never matches again."""

    runs: list[Run]
    matches: list[list[Match]]
    report: Report

    @property
    def last(self) -> tuple[Run | None, list[Match]]:
        return (self.runs[-1], self.matches[-1]) if self.runs else (None, [])


def diagnose(
    facts: list[Fact], source: str, user_command: str | None = None, model: ModelShape | None = None
) -> Diagnosis:
    """The diagnosis of these facts; the report's events are the caller's to add (`with_events`).
    `model`, the served model's shape when its folder is given, lets rules size what the log does not."""
    runs = split_runs(facts)
    rules = load_rules()
    matches = [match_run(run, rules, model=model) for run in runs]
    findings_by_run = [[finding(m) for m in ms] for ms in matches]
    findings = [f for run_findings in reversed(findings_by_run) for f in run_findings]
    last_run, last_matches = (runs[-1], matches[-1]) if runs else (None, [])
    report = Report(
        source=source,
        vllm_version=next((version for r in reversed(runs) if (version := r.vllm_version)), None),
        backend=next((backend for r in reversed(runs) if (backend := r.backend)), None),
        verdict=verdict(last_run, last_matches),
        facts=last_values(runs),
        findings=findings,
    )
    report.command = corrected_command(last_run, findings_by_run[-1] if findings_by_run else [], user_command)
    return Diagnosis(runs, matches, report)


def last_values(runs: list[Run]) -> dict[str, Number]:
    """The last value of each name over all facts, from each run's (the runs hold every fact, in order)."""
    values: dict[str, Number] = {}
    for run in runs:
        values.update(run.values)
    return values


def verdict(run: Run | None, matches: list[Match]) -> Verdict:
    failing = [m for m in matches if m.rule.severity != "info" and m.rule.failure != "none"]
    if failing:
        top = failing[0]
        return Verdict(phase=top.rule.phase, failure=top.rule.failure, rule=top.rule.code, line=top.event.line)
    if run is None or not _has_vllm_facts(run):
        return Verdict(phase="unknown", failure="none")
    return Verdict(phase="healthy", failure="none")


def _has_vllm_facts(run: Run) -> bool:
    # A lone Python traceback is not evidence that the log is a vLLM log; a vLLM record is.
    return any(f.kind not in TRACEBACK_KINDS | {"exception"} or f.text.get("package") == "vllm" for f in run.facts)


def ranked_remediations(remediations: list[Remediation], context: dict[str, Any]) -> list[RemediationOut]:
    """The remediations that apply in this context, filled from it and ranked in the rule's order."""
    out: list[RemediationOut] = []
    for remediation in remediations:
        flags = flag_values(remediation, context)
        if flags is None:
            continue
        out.append(
            RemediationOut(
                rank=len(out) + 1,
                title=render(remediation.title, context),
                flags=flags,
                why=render(remediation.why, context),
                tradeoff=render(remediation.tradeoff, context),
            )
        )
    return out


def finding(match: Match) -> Finding:
    """A log rule's finding on the event it fired on."""
    return rule_finding(match.rule, match.context, match.event.line, match.rule.evidence)


def rule_finding(
    rule: Judged, context: dict[str, Any], line: int | None, evidence: Evidence, source: str = ""
) -> Finding:
    """Any rule's finding: its sentences and remediations filled from the context (`source` names the
    replica a metric rule judged)."""
    message = render(rule.message, context)
    return Finding(
        rule=rule.code,
        name=rule.name,
        phase=rule.phase,
        severity=rule.severity,
        failure=rule.failure,
        evidence=evidence,
        line=line,
        message=f"{source}: {message}" if source else message,
        remediations=ranked_remediations(rule.remediations, context),
    )


def corrected_command(run: Run | None, findings: list[Finding], user_command: str | None) -> Command:
    """The original command and the top remediation applied to it: one change at a time."""
    argv = command.original(run, user_command)
    top = next((r for f in findings[:1] for r in f.remediations if r.flags), None)
    original = command.render(argv) if argv else None
    if top is None:
        return Command(original=original)
    if argv is None:
        return Command(change=top.flags, change_args=command.render(command.flag_tokens(top.flags)))
    return Command(original=original, corrected=command.render(command.apply(argv, top.flags)), change=top.flags)
