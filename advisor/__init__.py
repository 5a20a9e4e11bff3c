"""vllm-advisor: reads vLLM logs, says what went wrong and what to change.

The library API (everything else in the package is internal and may change):

    from advisor import analyze, follow_lines

    report = analyze(Path("vllm.log"))               # a path ('-' is stdin), the log's bytes, or its lines
    report.verdict.failure, report.findings[0].remediations, report.command.corrected
    for item in follow_lines(open("vllm.log")):      # findings as the lines arrive
        print(item.summary())
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.pipeline import Log, analyze
    from advisor.report.contract import (
        Command,
        EventOut,
        Finding,
        RemediationOut,
        Report,
        StreamFinding,
        Verdict,
        read_report,
    )
    from advisor.stream.engine import StreamEngine, follow_lines

# Imported when first asked for: the command line imports only the stages a run uses.
_HOMES = {
    "Log": "advisor.pipeline",
    "analyze": "advisor.pipeline",
    "StreamEngine": "advisor.stream.engine",
    "follow_lines": "advisor.stream.engine",
    **dict.fromkeys(
        ("Command", "EventOut", "Finding", "RemediationOut", "Report", "StreamFinding", "Verdict", "read_report"),
        "advisor.report.contract",
    ),
}

__all__ = [
    "Command",
    "EventOut",
    "Finding",
    "Log",
    "RemediationOut",
    "Report",
    "StreamEngine",
    "StreamFinding",
    "Verdict",
    "analyze",
    "follow_lines",
    "read_report",
]


def __dir__() -> list[str]:
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'advisor' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
