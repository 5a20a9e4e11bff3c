"""SARIF 2.1.0: one run per invocation, rules from the rule files, one result per finding."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from advisor.report.about import rule_page, tool_version
from advisor.report.contract import Finding, Report
from advisor.report.formats.summary import command_title
from advisor.rules.schema import Rule, load_rules

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/vllm-advisor/"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
# Code-scanning tools match results across runs by this key; versioned so a change of recipe is visible.
FINGERPRINT_KEY = "vllmAdvisorLine/v1"


def render(reports: list[Report]) -> str:
    return json.dumps(sarif_log(reports), indent=2, ensure_ascii=False) + "\n"


def sarif_log(reports: list[Report]) -> dict[str, Any]:
    rules = load_rules()
    index = {rule.code: position for position, rule in enumerate(rules)}
    results = [result(report, finding, index) for report in reports for finding in report.findings]
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "vllm-advisor",
                        "version": tool_version(),
                        "informationUri": INFORMATION_URI,
                        "rules": [descriptor(rule) for rule in rules],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def descriptor(rule: Rule) -> dict[str, Any]:
    entry = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": short_description(rule)},
        "fullDescription": {"text": rule.explanation.strip()},
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {"phase": rule.phase, "failure": rule.failure, "versions": rule.versions},
    }
    entry["helpUri"] = rule_page(rule.code)
    return entry


def short_description(rule: Rule) -> str:
    """What the rule detects, one sentence by convention (splitting on a full stop would cut a quoted "...")."""
    return " ".join(rule.detects.split())


def result(report: Report, finding: Finding, index: dict[str, int]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "ruleId": finding.rule,
        "level": LEVEL[finding.severity],
        "message": {"text": message_text(report, finding)},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": artifact_uri(report.source)},
                    # A finding of the metrics has no line of the log.
                    **({} if finding.line is None else {"region": {"startLine": max(finding.line, 1)}}),
                }
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint(report, finding)},
        "properties": {
            "phase": finding.phase,
            "failure": finding.failure,
            "evidence": finding.evidence,
            "verdict": report.verdict.failure,
        },
    }
    if finding.rule in index:
        entry["ruleIndex"] = index[finding.rule]
    return entry


def message_text(report: Report, finding: Finding) -> str:
    parts = [finding.message]
    if finding.remediations:
        parts.append(f"First change: {finding.remediations[0].title}")
    # The corrected command belongs to the verdict's finding, which the report lists first.
    shown = report.command.corrected or report.command.change_args
    if shown and report.findings and finding is report.findings[0]:
        parts.append(f"{command_title(report)}: {shown}")
    # One part a line: no full stop is added after a flag value, so it can be copied as is.
    return "\n".join(parts)


def artifact_uri(source: str) -> str:
    """The log file as given: a relative reference stays relative, an absolute path becomes a file: URI."""
    if source == "<stdin>":
        return "stdin"
    path = Path(source)
    if path.is_absolute():
        return path.as_uri()
    return quote(str(PurePosixPath(*path.parts)))


def fingerprint(report: Report, finding: Finding) -> str:
    """Rule code and what the finding's line says (its facts), not where it is: stable when lines shift."""
    line_facts = [(event.kind, sorted(event.values.items())) for event in report.events if event.line == finding.line]
    basis = json.dumps([finding.rule, line_facts or " ".join(finding.message.split())], sort_keys=True)
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()[:32]
