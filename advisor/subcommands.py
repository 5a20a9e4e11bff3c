"""The subcommands besides analysing logs: explain CODE, rules, schema, compare, and the doors of
follow, verify and plan (each imported only when asked for)."""

from __future__ import annotations

import sys
from importlib import resources

from advisor import pipeline
from advisor.report.about import rule_page
from advisor.rules.schema import load_rules
from advisor.usage import EXIT_OK, InputError, OneLineParser, error_line, write_lines, writing


def explain(argv: list[str]) -> int:
    if len(argv) != 1:
        return error_line("usage: vllm-advisor explain CODE")
    code = argv[0].upper()
    rule = next((r for r in load_rules() if r.code == code or r.name == argv[0]), None)
    if rule is None and code.startswith("M"):  # a metric rule (rules/metrics/)
        from advisor.rules.schema import load_metric_rules

        metric = next((r for r in load_metric_rules() if r.code == code), None)
        if metric is not None:
            return write_lines(
                [
                    f"{metric.code} {metric.name} ({metric.phase}, {metric.severity}, failure: {metric.failure})",
                    f"reads: {', '.join(metric.reads)}",
                    metric.explanation,
                    f"more: {rule_page(metric.code)}",
                ]
            )
    if rule is None:
        return error_line(f"no rule {argv[0]!r}; 'vllm-advisor rules' lists them")
    return write_lines(
        [
            f"{rule.code} {rule.name} ({rule.phase}, {rule.severity}, failure: {rule.failure})",
            f"versions: {rule.versions}",
            rule.explanation,
            f"more: {rule_page(rule.code)}",
            *[f"see: {reference}" for reference in rule.references],
        ]
    )


def follow_stream(argv: list[str]) -> int:
    from advisor.stream import follow  # its server and metrics imports would slow every one-shot analysis

    return follow.main(argv)


def verify(argv: list[str]) -> int:
    from advisor.live import verify as live  # only the live check needs the server helpers

    return live.main(argv)


def plan(argv: list[str]) -> int:
    from advisor.plan import command_line  # the planner reads no logs: none of the analysis is imported for it

    return command_line.main(argv)


def compare_runs(argv: list[str]) -> int:
    """One row per run, what each changed from the run before and what that did."""
    from advisor import compare
    from advisor.scrape.fetch import MetricsError

    parser = OneLineParser(
        prog="vllm-advisor compare",
        description="Compare runs of the same server, in the order they were made: the flags each changed "
        "and what that did to the verdict, the KV cache and the load figures.",
    )
    parser.add_argument("logs", nargs="+", help="two or more logs, oldest first")
    parser.add_argument(
        "--metrics",
        action="append",
        default=[],
        metavar="SOURCE",
        help="a /metrics dump or URL per log, in the logs' order (give one for every log, or none)",
    )
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    args = parser.parse_args(argv)
    if len(args.logs) < 2:
        raise InputError("compare needs two logs or more, oldest first")
    if args.metrics and len(args.metrics) != len(args.logs):
        raise InputError(f"{len(args.metrics)} --metrics for {len(args.logs)} logs: give one for every log, or none")
    runs = [pipeline.analysis_of_file(path, None) for path in args.logs]
    try:
        rows = compare.compare(runs, args.metrics)
    except MetricsError as error:
        return error_line(str(error))
    with writing("output"):
        sys.stdout.write(compare.render(rows, args.format))
        sys.stdout.flush()
    return EXIT_OK


def print_schema(argv: list[str]) -> int:
    """The JSON Schema of the report (or of the streamed finding records), as shipped in the wheel."""
    names = ("report", "finding")
    if len(argv) > 1 or (argv and argv[0] not in names):
        return error_line("usage: vllm-advisor schema [report|finding]")
    text = (resources.files("advisor.report") / "schemas" / f"{argv[0] if argv else 'report'}.json").read_text(
        encoding="utf-8"
    )
    with writing("output"):
        sys.stdout.write(text)
        sys.stdout.flush()
    return EXIT_OK


def list_rules(argv: list[str]) -> int:
    if argv:
        return error_line("usage: vllm-advisor rules")
    from advisor.rules.schema import load_metric_rules  # the rules of --metrics (rules/metrics/)

    rows = [(r.code, r.name, r.phase, r.severity, r.failure) for r in load_rules()]
    rows += [(r.code, r.name, r.phase, r.severity, r.failure) for r in load_metric_rules()]
    return write_lines(
        [f"{code}  {name:<40} {phase:<8} {severity:<8} {failure}" for code, name, phase, severity, failure in rows]
    )
