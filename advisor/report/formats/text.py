"""Text: the terminal report (rich), verdict first, readable at 80 columns, plain when not a terminal."""

from __future__ import annotations

import io
import os
import sys

from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from advisor.report.about import rule_page
from advisor.report.contract import Finding, Report
from advisor.report.formats import metrics_lines, sparklines
from advisor.report.formats.command_lines import shows_as_is, wrapped
from advisor.report.formats.summary import EVIDENCE, KEY_FACTS, command_title, top_finding

# On a backend other than CUDA the device is not a GPU: its memory facts are shown by what they are.
NOT_GPU_LABELS = {"total_gpu_gib": "total_memory_gib", "free_gpu_gib": "free_memory_gib", "gpu_blocks": "kv_blocks"}
CUDA_LIKE = {None, "cuda", "rocm"}
BACKEND_NAMES = {"cpu": "CPU", "xpu": "XPU", "tpu": "TPU", "hpu": "HPU", "npu": "NPU", "rocm": "ROCm", "cuda": "CUDA"}
STYLE = {"error": "bold red", "warning": "bold yellow", "info": "cyan"}


def console(buffer: io.StringIO, width: int | None = None) -> Console:
    terminal = sys.stdout.isatty()
    width = width or (min(Console().width, 100) if terminal else 80)
    return Console(
        file=buffer,
        width=width,
        force_terminal=terminal,
        no_color=bool(os.environ.get("NO_COLOR")) or not terminal,
        highlight=False,
        soft_wrap=False,
        emoji=False,
    )  # ':rocket:' in a model name stays as is


def render(reports: list[Report], width: int | None = None) -> str:
    """The reports as text `width` columns wide (default: the terminal's, at most 100; 80 off a terminal)."""
    buffer = io.StringIO()
    out = console(buffer, width)
    for index, report in enumerate(reports):
        if index:
            out.rule()
        write(out, report)
    # rich pads wrapped lines to the width; trailing blanks only get in the way of diffs and pastes.
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def write(out: Console, report: Report) -> None:
    verdict = report.verdict
    about = ", ".join(
        ([f"vLLM {report.vllm_version}"] if report.vllm_version else [])
        + ([f"{BACKEND_NAMES.get(report.backend, report.backend)} backend"] if report.backend else [])
    )
    head = f"vllm-advisor: {report.source}"
    # A path is not broken; what is said about it goes under it when both do not fit on one line.
    joiner = " " if len(head) + len(about) + 3 <= out.width else "\n  "
    out.print(
        f"[bold]vllm-advisor[/]: {escape(report.source)}" + (f"{joiner}({about})" if about else ""), soft_wrap=True
    )
    if verdict.failure == "none":
        label = "no vLLM log lines recognised" if verdict.phase == "unknown" else "healthy: no failure found"
        out.print(f"[bold green]{label}[/]")
    else:
        where = f", line {verdict.line}" if verdict.line else ""
        out.print(f"[bold red]{verdict.phase.upper()} FAILURE: {verdict.failure}[/] ({verdict.rule}{where})")
    for line in metrics_lines.head(report):
        out.print(f"[bold]{escape(line)}[/]")
    findings = report.findings
    top = top_finding(report)
    if top is not None:
        out.print(Padding(f"{EVIDENCE[top.evidence]}{escape(top.message)}", (0, 0, 0, 2)))
    numbers = [(name, report.facts[name]) for name in KEY_FACTS if name in report.facts]
    if numbers:
        labels = {} if report.backend in CUDA_LIKE else NOT_GPU_LABELS
        out.print("Numbers from the log")  # not the table's title: rich wraps a title to the table's width
        table = Table(show_header=False, box=None, pad_edge=False)
        for name, value in numbers:
            table.add_row(f"  {labels.get(name, name)}", str(value))
        out.print(table)
    for line in sparklines.lines(report):
        out.print(escape(line), highlight=False)
    if top is not None and top.remediations:
        write_remediations(out, top)
    if shown := report.command.corrected or report.command.change_args:
        out.print(f"[bold]{command_title(report)}[/] (the first change only):")
        if shows_as_is(shown):
            for line in wrapped(shown, out.width):
                out.print(line, markup=False, soft_wrap=True)
        else:
            # A terminal would hide or reorder such characters: what is seen is not what is pasted.
            out.print("  not shown: it holds control or invisible characters; see --format json")
    if top is not None:
        out.print(f"More on {top.rule}: {rule_page(top.rule)}", markup=False, soft_wrap=True)
    for finding in findings:
        if finding is not top:
            # The message wraps under itself, not at the margin where the next finding starts.
            where = "metrics" if finding.line is None else f"line {finding.line}"
            row = Table.grid()
            row.add_row(
                f"[{STYLE[finding.severity]}]{finding.severity}[/] ",
                f"{where}: {finding.rule} {finding.name}: {EVIDENCE[finding.evidence]}{escape(finding.message)}",
            )
            out.print(row)
    for line in metrics_lines.tail(report):
        out.print(escape(line))


def write_remediations(out: Console, finding: Finding) -> None:
    out.print("[bold]What to change[/] (one change at a time, in this order):")
    for remediation in finding.remediations:
        # A title that wraps goes on under its own first word, not at the margin.
        number = f"  {remediation.rank}. "
        title = Table.grid()
        title.add_row(number, escape(remediation.title))
        out.print(title)
        if remediation.why:
            out.print(Padding(f"why: {escape(remediation.why)}", (0, 0, 0, 5), expand=False))
        if remediation.tradeoff:
            out.print(Padding(f"trade-off: {escape(remediation.tradeoff)}", (0, 0, 0, 5), expand=False))
