"""vllm-advisor: reads vLLM logs, says what went wrong and what to change.

The library API (everything else in the package is internal and may change):

    from advisor import analyze, follow_lines

    report = analyze(Path("vllm.log"))               # a path ('-' is stdin), the log's bytes, or its lines
    report.verdict.failure, report.findings[0].remediations, report.command.corrected
    for item in follow_lines(open("vllm.log")):      # findings as the lines arrive
        print(item.summary())
"""

from advisor.pipeline import Log, analyze
from advisor.report.contract import Command, EventOut, Finding, RemediationOut, Report, StreamFinding, Verdict
from advisor.stream.engine import StreamEngine, follow_lines

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
]
