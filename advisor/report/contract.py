"""The report contract (vllm-advisor.report/1): what every format is written from."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Literal, TextIO

from pydantic import BaseModel, Field

from advisor.parse.facts import Number

SCHEMA = "vllm-advisor.report/1"


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
    evidence: Literal["logged", "inferred"]
    line: int
    message: str
    remediations: list[RemediationOut] = Field(default_factory=list)


class Command(BaseModel):
    original: str | None = None
    corrected: str | None = None


class Report(BaseModel):
    schema_: str = Field(SCHEMA, alias="schema")
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
        return self.model_dump_json(by_alias=True, indent=2)

    def json_parts(self) -> Iterator[str]:
        """The JSON text in pieces, to write a big report without holding it whole."""
        yield self.to_json()

    def write_json(self, stream: TextIO) -> None:
        for part in self.json_parts():
            stream.write(part)

    @property
    def failed(self) -> bool:
        return self.verdict.failure != "none"
