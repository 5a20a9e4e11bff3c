"""The report contract (vllm-advisor.report/2): what every format is written from."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal, TextIO

from pydantic import BaseModel, Field

from advisor.parse.facts import Number
from advisor.report import writer

SCHEMA: Final = "vllm-advisor.report/2"
FINDING_SCHEMA: Final = "vllm-advisor.finding/1"


class Verdict(BaseModel):
    phase: Literal["startup", "runtime", "healthy", "unknown"]
    failure: str
    rule: str | None = None
    line: int | None = None


class EventOut(BaseModel):
    line: int
    kind: str
    values: dict[str, Number]


class RemediationOut(BaseModel):
    rank: int
    title: str
    flags: dict[str, str | None]
    why: str
    tradeoff: str


class Finding(BaseModel):
    rule: str
    name: str
    phase: str
    severity: Literal["error", "warning", "info"]
    failure: str
    # logged: a line says it; inferred: worked out from the lines; confirmed: inferred, then confirmed by
    # /metrics; metrics: from /metrics alone.
    evidence: Literal["logged", "inferred", "confirmed", "metrics"]
    line: int | None  # None for a finding of the metrics alone
    message: str
    remediations: list[RemediationOut] = Field(default_factory=list)


class Command(BaseModel):
    """The launch command, and the one change the top remediation makes to it."""

    # As the log (or --cmd) gives it, shell-quoted; null when neither gives it.
    original: str | None = None
    # The original with the change applied: always a whole command, or null.
    corrected: str | None = None
    # The change, flag to value (null: remove the flag; "": a switch); {} when there is none.
    change: dict[str, str | None] = Field(default_factory=dict)
    # The change as shell arguments, when there is no original to apply it to; null otherwise.
    change_args: str | None = None


class Report(BaseModel):
    schema_: Literal["vllm-advisor.report/2"] = Field(SCHEMA, alias="schema")
    source: str
    # The events come first: they are known as soon as the log is read, so a big log's report is
    # written while its runs, rules and findings, which come after them, are being worked out.
    events: list[EventOut] = Field(default_factory=list)
    vllm_version: str | None = None
    backend: str | None = None  # the device the log names (cpu, cuda, xpu, ...); none when it names none
    verdict: Verdict
    facts: dict[str, Number] = Field(default_factory=dict)
    findings: list[Finding] = Field(default_factory=list)
    command: Command = Field(default_factory=Command)

    model_config = {"populate_by_name": True}

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


class FindingRecord(Finding):
    """A finding as `follow --format ndjson` and the shipper destinations write it, one a line."""

    schema_: Literal["vllm-advisor.finding/1"] = Field(FINDING_SCHEMA, alias="schema")
    event: Literal["finding", "retraction", "recovery"]
    source: str
    run: int


def json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of each document the advisor writes, by name (shipped in advisor/report/schemas)."""
    return {
        "report": Report.model_json_schema(by_alias=True, mode="serialization"),
        "finding": FindingRecord.model_json_schema(by_alias=True, mode="serialization"),
    }


# What `--metrics` adds: the replicas' /metrics read, and what they made of the log's inferences.
class MetricsRead(BaseModel):
    source: str  # a path, or the URL without credentials
    read_at: str  # ISO 8601, UTC
    fetched: bool  # scraped from a live server now, or read from a saved dump
    window_start: str | None = None  # ISO 8601: counts, rates and quantiles cover window_start .. read_at
    releases: str | None = None  # the vLLM releases whose metric names the dump matches
    values: dict[str, float | str | bool] = Field(default_factory=dict)


class MetricsMissing(BaseModel):
    source: str
    error: str


class Settled(BaseModel):
    """What the metrics made of one of the log's inferred findings."""

    rule: str
    outcome: str  # confirmed | withdrawn | unsettled
    why: str


class MetricsSection(BaseModel):
    read: list[MetricsRead] = Field(default_factory=list)
    missing: list[MetricsMissing] = Field(default_factory=list)
    log_findings: list[Settled] = Field(default_factory=list)
    bottleneck: str | None = None


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
            **self.finding.model_dump(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def summary(self) -> str:
        f = self.finding
        word = {"finding": "", "retraction": "RETRACTED ", "recovery": "RECOVERED "}[self.event]
        where = "metrics" if f.line is None else f"line {f.line}"  # a finding of a server's /metrics has no line
        return f"{word}{f.severity.upper()} {f.rule} {f.name} [{self.source} run {self.run} {where}] {f.message}"
