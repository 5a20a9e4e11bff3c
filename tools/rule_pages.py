"""Write the site's rule pages from the rule files: `python tools/rule_pages.py`.

docs/rules/CODE.md for every rule (what it detects, why, an example from a real log, the fix and its
trade-offs) and docs/guide.md, the operator's guide by failure class. A test keeps them equal to this output.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from advisor import analyze  # noqa: E402  (needs the repo on sys.path first)
from advisor.report.formats import text  # noqa: E402
from advisor.rules.schema import (  # noqa: E402
    RUNTIME_FAILURES,
    STARTUP_FAILURES,
    VOCABULARY,
    MetricRule,
    Rule,
    load_metric_rules,
    load_rules,
)

DOCS = ROOT / "docs"
FIXTURES = ROOT / "fixtures"
# Lines of the log shown before the one a finding rests on: what led to it.
LINES_BEFORE = 3
# Sample lines of each metric a metric rule reads, shown from its dump.
SAMPLES_PER_METRIC = 3


def pages() -> dict[Path, str]:
    """Every generated page by its path."""
    log_rules, metric_rules = load_rules(), load_metric_rules()
    written = {DOCS / "rules" / f"{rule.code}.md": log_rule_page(rule) for rule in log_rules}
    written |= {DOCS / "rules" / f"{rule.code}.md": metric_rule_page(rule) for rule in metric_rules}
    written[DOCS / "guide.md"] = guide([*log_rules, *metric_rules])
    return written


def log_rule_page(rule: Rule) -> str:
    about = [("phase", rule.phase), ("severity", rule.severity), ("failure", f"`{rule.failure}`")]
    about += [("evidence", rule.evidence), ("vLLM versions", rule.versions)]
    return (
        "\n".join(
            [
                *head(rule, about),
                "## Example from a real log",
                "",
                *log_example(rule),
                *tail(rule),
                *[f"- <{reference}>" for reference in rule.references],
            ]
        ).rstrip()
        + "\n"
    )


def metric_rule_page(rule: MetricRule) -> str:
    about = [("phase", rule.phase), ("severity", rule.severity), ("failure", f"`{rule.failure}`")]
    about += [("scope", rule.scope), ("reads", ", ".join(f"`{name}`" for name in rule.reads))]
    return (
        "\n".join(
            [*head(rule, about), "## Example from a real /metrics", "", *metrics_example(rule), *tail(rule)]
        ).rstrip()
        + "\n"
    )


def head(rule: Rule | MetricRule, about: list[tuple[str, str]]) -> list[str]:
    return [
        f"# {rule.code} {rule.name}",
        "",
        "| | |",
        "| --- | --- |",
        *[f"| {name} | {value} |" for name, value in about],
        "",
        "## What it detects",
        "",
        prose(rule.detects),
        "",
        "## Why",
        "",
        prose(rule.why),
        "",
    ]


def tail(rule: Rule | MetricRule) -> list[str]:
    lines = ["## The fix", "", prose(rule.fix), ""]
    if rule.remediations:
        lines += ["What the advisor proposes, in this order, when each applies (`{...}` comes from the log):", ""]
        for rank, remediation in enumerate(rule.remediations, 1):
            lines += [f"{rank}. **{remediation.title}**"]
            lines += [f"    - why: {why}" for why in remediation.why]
            lines += [f"    - trade-off: {remediation.tradeoff}", ""]
    lines += ["## Trade-offs", "", prose(rule.tradeoffs), ""]
    if isinstance(rule, Rule) and rule.references:
        lines += ["## References", ""]
    return lines


def log_example(rule: Rule) -> list[str]:
    """The first log the rule must fire on: the lines its finding rests on, then the advisor's report."""
    case = next(case for case in rule.cases if case.fires)
    path = fixture(case.log)
    name = path.relative_to(ROOT).as_posix()
    report = analyze(path, name=name)
    finding = next(finding for finding in report.findings if finding.rule == rule.code)
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    shown = [f"From `{name}`" + (f", line {finding.line}:" if finding.line else ":"), ""]
    if finding.line:
        start = max(1, finding.line - LINES_BEFORE)
        shown += ["```text", *lines[start - 1 : finding.line], "```", ""]
    report_text = text.render([report], width=100).rstrip("\n").splitlines()
    return [*shown, "What `vllm-advisor --format text` answers:", "", "```text", *report_text, "```", ""]


def metrics_example(rule: MetricRule) -> list[str]:
    """The first dump the rule must fire on (its file's cases): its samples of what the rule reads."""
    case = next(case for case in rule.cases if case.fires)
    dump = case.dumps[0]
    samples = (FIXTURES / dump).read_text(encoding="utf-8").splitlines()
    shown = []
    for metric in rule.reads:
        shown += [line for line in samples if line.startswith((metric + "{", metric + " "))][:SAMPLES_PER_METRIC]
    lines = [f"From `fixtures/{dump}`, captured from a live vLLM (CPU build):", "", "```text", *shown, "```", ""]
    edits = {**case.set, **{name: "observations added" for name in case.observe}}
    if edits:
        lines += ["The rule's firing case changes these, in memory, before it is read:", ""]
        lines += [f"- `{name}`: {value}" for name, value in edits.items()]
        lines += [""]
    return lines


def guide(rules: list[Rule | MetricRule]) -> str:
    """The operator's guide: each failure class, the rules that find it, what to change first."""
    lines = [
        "# Operator's guide by failure class",
        "",
        "Each verdict names one failure class. Below, for each: what it means, how to fix it, and the rules",
        "that find it, each with its page. The advisor's own report gives the numbers from your log; the",
        "fixes here are in the order it proposes them.",
        "",
    ]
    for title, failures in (
        ("Start-up failures", STARTUP_FAILURES),
        ("Runtime failures", RUNTIME_FAILURES),
        ("Healthy runs with advice", ("none",)),
    ):
        lines += [f"## {title}", ""]
        for failure in failures:
            finding = [rule for rule in rules if rule.failure == failure]
            if not finding:
                continue
            # A word that a fallback rule concludes when nothing more specific does is described by that rule.
            first = next((rule for rule in finding if getattr(rule, "fallback", False)), finding[0])
            means = (
                f"**{VOCABULARY[failure].means[0].upper()}{VOCABULARY[failure].means[1:]}.** "
                if failure in VOCABULARY
                else ""
            )
            lines += [f"### `{failure}`", "", means + prose(first.detects), "", f"**Fix.** {prose(first.fix)}", ""]
            lines += [f"**Trade-offs.** {prose(first.tradeoffs)}", ""]
            lines += ["Rules: " + ", ".join(f"[{rule.code} {rule.name}](rules/{rule.code}.md)" for rule in finding)]
            lines += [""]
    return "\n".join(lines).rstrip() + "\n"


def fixture(start: str) -> Path:
    """A rule case's log: its file name, or the start of it, under fixtures/ (a whole name wins)."""
    matches = sorted(FIXTURES.rglob(f"{start}*.log"))
    exact = [match for match in matches if match.stem == start]
    return (exact or matches)[0]


def prose(text: str) -> str:
    """A rule file's wrapped paragraph as one Markdown paragraph."""
    return " ".join(text.split())


if __name__ == "__main__":
    for path, content in pages().items():
        path.write_text(content, encoding="utf-8")
