"""The report contract (vllm-advisor.report/2): what every format is written from.

Plain dataclasses, so that a run builds no validating model; pydantic, imported only when asked, gives
their JSON Schema and reads a report's JSON back, validated (`read_report`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal, TextIO

from advisor.parse.facts import Number
from advisor.report import writer

# A rule's phase; a verdict's is "unknown" too, where no log line and no metric decides it.
Phase = Literal["startup", "runtime", "healthy"]
# logged: a line says it; inferred: worked out from the lines; confirmed: inferred, then confirmed by
# /metrics; metrics: from /metrics alone.
Evidence = Literal["logged", "inferred", "confirmed", "metrics"]
SCHEMA: Final = "vllm-advisor.report/2"
FINDING_SCHEMA: Final = "vllm-advisor.finding/1"


@dataclass(kw_only=True)
class Verdict:
    phase: Literal["startup", "runtime", "healthy", "unknown"]
    failure: str
    rule: str | None = None
    line: int | None = None


@dataclass(kw_only=True)
class EventOut:
    line: int
    kind: str
    values: dict[str, Number]


@dataclass(kw_only=True)
class RemediationOut:
    rank: int
    title: str
    flags: dict[str, str | None]
    why: str
    tradeoff: str


@dataclass(kw_only=True)
class Finding:
    rule: str
    name: str
    phase: Phase
    severity: Literal["error", "warning", "info"]
    failure: str
    evidence: Evidence
    line: int | None  # None for a finding of the metrics alone
    message: str
    remediations: list[RemediationOut] = field(default_factory=list)


@dataclass(kw_only=True)
class Command:
    """The launch command, and the one change the top remediation makes to it."""

    # As the log (or --cmd) gives it, shell-quoted; null when neither gives it.
    original: str | None = None
    # The original with the change applied: always a whole command, or null.
    corrected: str | None = None
    # The change, flag to value (null: remove the flag; "": a switch); {} when there is none.
    change: dict[str, str | None] = field(default_factory=dict)
    # The change as shell arguments, when there is no original to apply it to; null otherwise.
    change_args: str | None = None


@dataclass(kw_only=True)
class Report:
    schema: Literal["vllm-advisor.report/2"] = SCHEMA
    source: str
    # The events come first: they are known as soon as the log is read, so a big log's report is
    # written while its runs, rules and findings, which come after them, are being worked out.
    events: list[EventOut] = field(default_factory=list)
    vllm_version: str | None = None
    backend: str | None = None  # the device the log names (cpu, cuda, xpu, ...); none when it names none
    verdict: Verdict
    facts: dict[str, Number] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    command: Command = field(default_factory=Command)

    def to_dict(self) -> dict[str, Any]:
        """The report as the JSON document holds it (dicts, lists and values)."""
        written: dict[str, Any] = writer.plain(self)
        return written

    def to_json(self) -> str:
        return writer.to_json(self)

    def json_parts(self) -> Iterator[str]:
        """The JSON text in pieces, to write a big report without holding it whole."""
        return writer.json_parts(self)

    def write_json(self, stream: TextIO) -> None:
        for part in self.json_parts():
            stream.write(part)

    @property
    def failed(self) -> bool:
        return self.verdict.failure != "none"


@dataclass(kw_only=True)
class FindingRecord(Finding):
    """A finding as `follow --format ndjson` and the shipper destinations write it, one a line."""

    schema: Literal["vllm-advisor.finding/1"] = FINDING_SCHEMA
    event: Literal["finding", "retraction", "recovery"]
    source: str
    run: int


def json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of each document the advisor writes, by name (shipped in advisor/report/schemas)."""
    from pydantic import TypeAdapter  # here: a run never needs it

    return {
        "report": TypeAdapter(Report).json_schema(mode="serialization"),
        "finding": TypeAdapter(FindingRecord).json_schema(mode="serialization"),
    }


def read_report(text: str | bytes) -> Report:
    """A report's JSON read back, validated against the contract (ValueError when it does not hold)."""
    from pydantic import TypeAdapter

    return TypeAdapter(Report).validate_json(text)


# What `--metrics` adds: the replicas' /metrics read, and what they made of the log's inferences.
@dataclass(kw_only=True)
class MetricsRead:
    source: str  # a path, or the URL without credentials
    read_at: str  # ISO 8601, UTC
    fetched: bool  # scraped from a live server now, or read from a saved dump
    window_start: str | None = None  # ISO 8601: counts, rates and quantiles cover window_start .. read_at
    releases: str | None = None  # the vLLM releases whose metric names the dump matches
    values: dict[str, int | float | str | bool] = field(default_factory=dict)


@dataclass(kw_only=True)
class MetricsMissing:
    source: str
    error: str


@dataclass(kw_only=True)
class Settled:
    """What the metrics made of one of the log's inferred findings."""

    rule: str
    outcome: str  # confirmed | withdrawn | unsettled
    why: str


@dataclass(kw_only=True)
class MetricsSection:
    read: list[MetricsRead] = field(default_factory=list)
    missing: list[MetricsMissing] = field(default_factory=list)
    log_findings: list[Settled] = field(default_factory=list)
    bottleneck: str | None = None


@dataclass(kw_only=True)
class JoinedReport(Report):
    """A report with the metrics it read: the log-only contract plus a `metrics` section."""

    metrics: MetricsSection


@dataclass(frozen=True)
class StreamFinding:
    """A finding of one run of one source, or the retraction of one that a later finding superseded."""

    source: str
    run: int
    finding: Finding
    event: str = "finding"  # finding | retraction | recovery

    @property
    def retracted(self) -> bool:
        return self.event == "retraction"

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": FINDING_SCHEMA,
            "event": self.event,
            "source": self.source,
            "run": self.run,
            **asdict(self.finding),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def summary(self) -> str:
        f = self.finding
        word = {"finding": "", "retraction": "RETRACTED ", "recovery": "RECOVERED "}[self.event]
        where = "metrics" if f.line is None else f"line {f.line}"  # a finding of a server's /metrics has no line
        return f"{word}{f.severity.upper()} {f.rule} {f.name} [{self.source} run {self.run} {where}] {f.message}"
