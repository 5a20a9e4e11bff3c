"""NDJSON: one JSON object a line per finding, each with its log's source and verdict, for log pipelines.

A log without findings still gives one line (source and verdict, no finding fields), so every input
is accounted for; a consumer tells the two apart by the presence of "rule".
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from advisor.report.contract import Report


def render(reports: list[Report]) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for report in reports for record in records(report))


def records(report: Report) -> list[dict[str, Any]]:
    context = {"source": report.source, "verdict": asdict(report.verdict)}
    if not report.findings:
        return [context]
    return [{**asdict(finding), **context} for finding in report.findings]
