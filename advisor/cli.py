"""Command line: vllm-advisor [FILE ...] | explain CODE | rules. Exit 0 healthy, 1 failure, 2 usage or input error."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from importlib import resources
from typing import NoReturn

from advisor import pipeline
from advisor.command import CommandError
from advisor.ingest import sources
from advisor.plan.figures import PlanError
from advisor.report.about import rule_page, tool_version
from advisor.report.contract import Report
from advisor.report.formats import FORMATS, json_format, render
from advisor.rules.schema import RuleSetError, load_rules
from advisor.usage import InputError, OneLineParser

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
SUBCOMMANDS = {"explain", "rules", "verify", "follow", "schema", "plan", "compare"}
# --fail-on threshold -> the finding severities that make the exit code 1 (info never does).
FAIL_ON = {"error": ("error",), "warning": ("error", "warning"), "never": ()}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv and argv[0] in SUBCOMMANDS:
            commands = {
                "explain": explain,
                "rules": list_rules,
                "verify": verify,
                "follow": follow_stream,
                "schema": print_schema,
                "plan": plan,
                "compare": compare_runs,
            }
            return commands[argv[0]](argv[1:])
        return analyze_files(argv)
    except (InputError, CommandError) as error:
        return _error(str(error))
    except RuleSetError as error:
        return _error(f"invalid rule file: {error}")
    except PlanError as error:  # the folder --model-dir names
        return _error(str(error))
    except KeyboardInterrupt:
        return _error("interrupted", code=130)
    except BrokenPipeError:
        # `vllm-advisor big.log | head`: the reader left; say nothing more.
        _discard_stdout()
        return EXIT_OK


def run() -> NoReturn:
    """The `vllm-advisor` command: main(), then an exit that skips freeing objects one by one at
    interpreter shutdown (a big log's facts and events take longer to free than to write)."""
    code = main()
    try:
        if sys.stdout is not None:
            sys.stdout.flush()  # what `rules` or `explain` printed into a pipe
    except BrokenPipeError:  # `vllm-advisor rules | head -1`: the reader left; say nothing
        pass
    except OSError as error:
        code = _error(f"cannot write the output: {error.strerror or error}")
    os._exit(code)


def _discard_stdout() -> None:
    # Python flushes stdout again at exit; pointing it at /dev/null keeps that flush from
    # printing "Exception ignored" after our one-line message.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _error(message: str, code: int = EXIT_USAGE) -> int:
    print(f"vllm-advisor: {message}", file=sys.stderr)
    return code


def analysis_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="vllm-advisor",
        description="Read vLLM logs, say what went wrong and what to change. "
        "Subcommands: 'explain CODE', 'rules', 'schema [report|finding]', 'follow', 'verify LOG', "
        "'plan MODEL_DIR' (see their --help).",
    )
    parser.add_argument("--version", action="version", version=f"vllm-advisor {tool_version()}")
    parser.add_argument(
        "files",
        nargs="*",
        default=[],
        help="log files (.log, .gz) or folders of them (read in parallel); '-' or none for stdin",
    )
    parser.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default=None,
        help="output format (default: text on a terminal, json otherwise)",
    )
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default=None,
        help="exit 1 when any finding is an error (error), an error or a warning (warning), or never; "
        "default: when the verdict is a failure",
    )
    parser.add_argument("--cmd", help='the launch command to correct, e.g. "vllm serve MODEL --max-model-len 32768"')
    parser.add_argument(
        "--model-dir",
        help="the served model's folder on this machine: its config.json gives the KV cache bytes per token "
        "the log may not print, to size a fixed KV budget",
    )
    parser.add_argument(
        "--metrics",
        action="append",
        metavar="SOURCE",
        help="a replica's Prometheus /metrics: a saved dump or an http(s) URL; repeat for each "
        "replica; without a log file the metrics are judged alone",
    )
    return parser


def analyze_files(argv: list[str]) -> int:
    args = analysis_parser().parse_args(argv)
    with rare_collections():
        return _analyze_files(args)


@contextmanager
def rare_collections() -> Iterator[None]:
    """An analysis makes many objects that live to its end (facts, events) and few cycles: the cyclic
    garbage collector's passes over them cost more than the garbage they find, so it runs less often."""
    threshold = gc.get_threshold()
    gc.freeze()  # nothing made before (modules, the grammar) is garbage
    gc.set_threshold(50_000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def _analyze_files(args: argparse.Namespace) -> int:
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        raise InputError("cannot write the report: standard output is closed")
    output = args.format or ("text" if sys.stdout.isatty() else "json")
    if args.metrics:
        return _with_metrics(args, output)
    paths = [log for path in args.files or ["-"] for log in sources.log_files(path)]
    if not paths:
        raise InputError(f"{' '.join(args.files)}: no files in it")
    if len(paths) == 1:
        analyses = [analyze_one(paths[0], args.cmd, args.model_dir)]
    else:  # an archive: the logs are read in parallel
        results = pipeline.analyses(paths, args.cmd, args.model_dir)
        analyses = [_checked(path, result) for path, result in zip(paths, results, strict=True)]
    try:
        with writing("report"):
            if output == "json":
                json_format.write(analyses, sys.stdout)
            else:
                sys.stdout.write(render(output, [analysis.report() for analysis in analyses]))
            sys.stdout.flush()
    except pipeline.ProcessDied as error:  # the report was cut short: say why on stderr
        raise InputError(f"cannot finish the report: {error}") from None
    # The verdicts and findings decide: a big log's events need not be made into objects for it.
    return exit_code([analysis.diagnosis().report for analysis in analyses], args.fail_on)


def _with_metrics(args: argparse.Namespace, output: str) -> int:
    from advisor.scrape import cli  # prometheus_client and the metric rules only for runs that read metrics

    reports = cli.reports(args.files, args.metrics, args.cmd, partial(analyze_one, model_dir=args.model_dir))
    if reports is None:
        return EXIT_USAGE  # metrics alone, and none could be read: each said why on stderr
    with writing("report"):
        if output == "json":
            json_format.write(reports, sys.stdout)
        else:
            sys.stdout.write(render(output, reports))
        sys.stdout.flush()
    return exit_code(reports, args.fail_on)


@contextmanager
def writing(what: str) -> Iterator[None]:
    """Around writes to stdout: a full disk or a revoked terminal is a one-line error like any
    other; a reader that left (BrokenPipeError) is main's to keep quiet about."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as error:
        _discard_stdout()
        raise InputError(f"cannot write the {what}: {error.strerror or error}") from None


def exit_code(reports: list[Report], fail_on: str | None) -> int:
    if fail_on is None:
        failed = any(r.failed for r in reports)
    else:
        failed = any(f.severity in FAIL_ON[fail_on] for r in reports for f in r.findings)
    return EXIT_FAILURE if failed else EXIT_OK


def analyze_one(path: str, user_command: str | None, model_dir: str | None = None) -> pipeline.Analysis:
    try:
        return pipeline.analysis(path, user_command, model_dir=model_dir)
    except (OSError, EOFError, pipeline.ProcessDied) as error:
        return _checked(path, error)


def _checked(path: str, result: pipeline.Analysis | BaseException) -> pipeline.Analysis:
    """The report, or the one-line error of a log that cannot be read."""
    if not isinstance(result, BaseException):
        return result
    try:
        raise result
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a log file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except (OSError, EOFError) as error:  # a truncated .gz, an unreadable device
        raise InputError(f"{path}: cannot read: {error}") from None
    except pipeline.ProcessDied as error:
        raise InputError(f"{path}: {error}") from None


def explain(argv: list[str]) -> int:
    if len(argv) != 1:
        return _error("usage: vllm-advisor explain CODE")
    code = argv[0].upper()
    rule = next((r for r in load_rules() if r.code == code or r.name == argv[0]), None)
    if rule is None and code.startswith("M"):  # a metric rule (rules/metrics/)
        from advisor.rules.schema import load_metric_rules

        metric = next((r for r in load_metric_rules() if r.code == code), None)
        if metric is not None:
            return _write_lines(
                [
                    f"{metric.code} {metric.name} ({metric.phase}, {metric.severity}, failure: {metric.failure})",
                    f"reads: {', '.join(metric.reads)}",
                    metric.explanation,
                    f"more: {rule_page(metric.code)}",
                ]
            )
    if rule is None:
        return _error(f"no rule {argv[0]!r}; 'vllm-advisor rules' lists them")
    return _write_lines(
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
    runs = [analyze_one(path, None) for path in args.logs]
    try:
        rows = compare.compare(runs, args.metrics)
    except MetricsError as error:
        return _error(str(error))
    with writing("output"):
        sys.stdout.write(compare.render(rows, args.format))
        sys.stdout.flush()
    return EXIT_OK


def print_schema(argv: list[str]) -> int:
    """The JSON Schema of the report (or of the streamed finding records), as shipped in the wheel."""
    names = ("report", "finding")
    if len(argv) > 1 or (argv and argv[0] not in names):
        return _error("usage: vllm-advisor schema [report|finding]")
    text = (resources.files("advisor.report") / "schemas" / f"{argv[0] if argv else 'report'}.json").read_text(
        encoding="utf-8"
    )
    with writing("output"):
        sys.stdout.write(text)
        sys.stdout.flush()
    return EXIT_OK


def list_rules(argv: list[str]) -> int:
    if argv:
        return _error("usage: vllm-advisor rules")
    from advisor.rules.schema import load_metric_rules  # the rules of --metrics (rules/metrics/)

    rows = [(r.code, r.name, r.phase, r.severity, r.failure) for r in load_rules()]
    rows += [(r.code, r.name, r.phase, r.severity, r.failure) for r in load_metric_rules()]
    return _write_lines(
        [f"{code}  {name:<40} {phase:<8} {severity:<8} {failure}" for code, name, phase, severity, failure in rows]
    )


def _write_lines(lines: list[str]) -> int:
    with writing("output"):
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()
    return EXIT_OK
