"""Command line: vllm-advisor [FILE ...] | explain CODE | rules. Exit 0 healthy, 1 failure, 2 usage or input error."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import NoReturn

from advisor import pipeline, subcommands
from advisor.command import CommandError
from advisor.ingest import sources
from advisor.plan.figures import PlanError
from advisor.report.about import tool_version
from advisor.report.contract import Report
from advisor.report.formats import FORMATS, json_format, render
from advisor.rules.schema import RuleSetError
from advisor.usage import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    InputError,
    OneLineParser,
    discard_stdout,
    error_line,
    writing,
)

SUBCOMMANDS = {"explain", "rules", "verify", "follow", "schema", "plan", "compare"}
# --fail-on threshold -> the finding severities that make the exit code 1 (info never does).
FAIL_ON = {"error": ("error",), "warning": ("error", "warning"), "never": ()}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv and argv[0] in SUBCOMMANDS:
            commands = {
                "explain": subcommands.explain,
                "rules": subcommands.list_rules,
                "verify": subcommands.verify,
                "follow": subcommands.follow_stream,
                "schema": subcommands.print_schema,
                "plan": subcommands.plan,
                "compare": subcommands.compare_runs,
            }
            return commands[argv[0]](argv[1:])
        return analyze_files(argv)
    except (InputError, CommandError) as error:
        return error_line(str(error))
    except RuleSetError as error:
        return error_line(f"invalid rule file: {error}")
    except PlanError as error:  # the folder --model-dir names
        return error_line(str(error))
    except KeyboardInterrupt:
        return error_line("interrupted", code=130)
    except BrokenPipeError:
        # `vllm-advisor big.log | head`: the reader left; say nothing more.
        discard_stdout()
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
        code = error_line(f"cannot write the output: {error.strerror or error}")
    os._exit(code)


class VersionAction(argparse.Action):
    """--version, reading the installed version only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **_: object):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> NoReturn:
        print(f"vllm-advisor {tool_version()}")
        parser.exit()


def analysis_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="vllm-advisor",
        description="Read vLLM logs, say what went wrong and what to change. "
        "Subcommands: 'explain CODE', 'rules', 'schema [report|finding]', 'follow', 'verify LOG', "
        "'plan MODEL_DIR' (see their --help).",
    )
    parser.add_argument("--version", action=VersionAction)
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
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        help="a Prometheus server's URL: vLLM's series over the last --since, per replica (instance)",
    )
    parser.add_argument(
        "--since", default="1h", metavar="DURATION", help="the window --prometheus reads: 30m, 1h, 1d (default 1h)"
    )
    parser.add_argument(
        "--match", metavar="LABELS", help='only the series --prometheus holds with these labels, e.g. job="vllm"'
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
    if args.prometheus is None and args.match is not None:
        raise InputError("--match needs --prometheus")
    if args.metrics or args.prometheus:
        return _with_metrics(args, output)
    paths = [log for path in args.files or ["-"] for log in sources.log_files(path)]
    if not paths:
        raise InputError(f"{' '.join(args.files)}: no files in it")
    if len(paths) == 1:
        analyses = [pipeline.analysis_of_file(paths[0], args.cmd, args.model_dir)]
    else:  # an archive: the logs are read in parallel
        analyses = pipeline.analyses(paths, args.cmd, args.model_dir)
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

    window = cli.prometheus_window(args.prometheus, args.since, args.match) if args.prometheus else None
    reports = cli.reports(
        args.files, args.metrics or [], window, args.cmd, partial(pipeline.analysis_of_file, model_dir=args.model_dir)
    )
    if reports is None:
        return EXIT_USAGE  # metrics alone, and none could be read: each said why on stderr
    with writing("report"):
        if output == "json":
            json_format.write(reports, sys.stdout)
        else:
            sys.stdout.write(render(output, reports))
        sys.stdout.flush()
    return exit_code(reports, args.fail_on)


def exit_code(reports: list[Report], fail_on: str | None) -> int:
    if fail_on is None:
        failed = any(r.failed for r in reports)
    else:
        failed = any(f.severity in FAIL_ON[fail_on] for r in reports for f in r.findings)
    return EXIT_FAILURE if failed else EXIT_OK
