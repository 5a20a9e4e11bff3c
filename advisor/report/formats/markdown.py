"""Markdown: one section per log for a pull-request or issue comment (GitHub-flavoured)."""

from __future__ import annotations

from advisor.report.contract import Report
from advisor.report.formats import metrics_lines
from advisor.report.formats.summary import KEY_FACTS, command_title, top_finding

# Characters that would start markup inside a sentence or end a table cell.
EVIDENCE = {
    "logged": "",
    "inferred": "*(inferred)* ",
    "confirmed": "*(inferred, confirmed by /metrics)* ",
    "metrics": "*(from /metrics)* ",
}
OTHER_EVIDENCE = {
    "logged": "",
    "inferred": " (inferred)",
    "confirmed": " (inferred, confirmed by /metrics)",
    "metrics": " (from /metrics)",
}
MARKUP = str.maketrans({c: "\\" + c for c in "\\`*<>|["})


def escape(text: str) -> str:
    return text.translate(MARKUP)


def render(reports: list[Report]) -> str:
    return "\n---\n\n".join(section(report) for report in reports)


def section(report: Report) -> str:
    version = f" (vLLM {report.vllm_version})" if report.vllm_version else ""
    out = [f"### vllm-advisor: `{report.source}`{version}", "", verdict_line(report), ""]
    out += [f"**{escape(line)}**\n" for line in metrics_lines.head(report)]
    top = top_finding(report)
    if top is not None:
        out += [EVIDENCE[top.evidence] + escape(top.message), ""]
    numbers = [(name, report.facts[name]) for name in KEY_FACTS if name in report.facts]
    if numbers:
        out += ["| Number from the log | Value |", "| --- | ---: |"]
        out += [f"| `{name}` | {value} |" for name, value in numbers]
        out.append("")
    if top is not None and top.remediations:
        out += ["**What to change** (one change at a time, in this order):", ""]
        for remediation in top.remediations:
            out.append(f"{remediation.rank}. {escape(remediation.title)}")
            if remediation.why:
                out.append(f"   - why: {escape(remediation.why)}")
            if remediation.tradeoff:
                out.append(f"   - trade-off: {escape(remediation.tradeoff)}")
        out.append("")
    if shown := report.command.corrected or report.command.change_args:
        out += [f"**{command_title(report)}** (the first change only):", "", "```sh", shown, "```", ""]
    others = [f for f in report.findings if f is not top]
    if others:
        out += ["**Other findings:**", ""]
        out += [
            f"- {f.severity} {'metrics' if f.line is None else f'line {f.line}'}: {f.rule} {f.name}"
            f"{OTHER_EVIDENCE[f.evidence]}: {escape(f.message)}"
            for f in others
        ]
        out.append("")
    if metrics_lines.tail(report):
        out += [f"- {escape(line)}" for line in metrics_lines.tail(report)] + [""]
    return "\n".join(out)


def verdict_line(report: Report) -> str:
    verdict = report.verdict
    if verdict.failure != "none":
        where = f", line {verdict.line}" if verdict.line else ""
        return f"**{verdict.phase.upper()} FAILURE: `{verdict.failure}`** ({verdict.rule}{where})"
    if verdict.phase == "unknown":
        return "**No vLLM log lines recognised.**"
    return "**Healthy: no failure found.**"
