"""Live check: relaunch vLLM with the corrected flags, confirm the fix, or walk the tuning ladder."""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import sys
import tempfile
import textwrap
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TextIO

from advisor import pipeline
from advisor.command import apply
from advisor.defaults import block_size
from advisor.ingest import sources
from advisor.live.drift import ANSWER_TOKENS, PROMPTS, Drift, compare_output, precision_changed
from advisor.live.ladder import ladder, ladder_knob, render_ladder
from advisor.live.launch import (
    CannotRun,
    Round,
    changed_flags,
    flag_value,
    launch,
    memory_changed,
    reason,
    sequences_that_fit,
    server_args,
    shown,
    vllm_python,
)
from advisor.live.patience import readiness_timeout
from advisor.plan.figures import PlanError
from advisor.report.contract import Report
from advisor.report.formats.command_lines import wrapped

EXIT_FIXED, EXIT_STILL_FAILING, EXIT_COULD_NOT_RUN, EXIT_TIMED_OUT = 0, 1, 2, 3
# A fix that multiplies the median first-token latency by this much is a trade-off, not a free win.
TRADE_OFF_FACTOR = 2.0


@dataclass
class Verification:
    """The fix's launch, the original's (with --load, when it served) and what the comparison says."""

    after: Round
    before: Round | None = None
    reference: Round | None = None  # the fix with the original's precision, when the fix changes it
    drift: Drift | None = None
    notes: list[str] = field(default_factory=list)


def memory_of(report: Report) -> tuple[float | None, float | None]:
    return report.facts.get("free_gpu_gib"), report.facts.get("total_gpu_gib")


def failure_of(result: Round) -> str:
    return "none" if result.outcome == "fixed" else str(result.verdict.get("failure"))


def command_to_check(report: Report, user_command: str | None) -> list[str]:
    if user_command:
        return shlex.split(user_command)
    command = report.command.corrected or (report.command.original if not report.failed else None)
    if not command or command.startswith("--"):  # the flag change alone: the log shows no command
        raise CannotRun('the log does not show the launch command; pass it with --cmd "vllm serve MODEL ..."')
    return shlex.split(command)


def verify(
    report: Report,
    argv: list[str],
    python: Path,
    workdir: Path,
    timeout: float,
    load: int = 0,
    max_tokens: int = 64,
    model: str | None = None,
    progress: TextIO | None = None,
) -> Verification:
    """Launch the fix (and, with a load, the original command first when its log shows it serving);
    a verdict that changes while the machine's memory changed too is retried once."""
    original = shlex.split(report.command.original) if report.command.original else None
    check = Verification(after=Round(command=shlex.join(argv), outcome="could not run"))
    baseline = memory_of(report)
    before_failure = report.verdict.failure
    if model:
        check.notes.append(f"model served from {model}")
    if load and original and original != argv and report.verdict.phase != "startup":
        check.before = launch(original, python, workdir, timeout, load, max_tokens, model=model, progress=progress)
        baseline = (check.before.free_memory_gib, check.before.total_memory_gib)
        before_failure = failure_of(check.before)
        argv = advised_sequences(argv, original, report, check)
    port = fix_port(original, argv)
    prompts = PROMPTS if original and precision_changed(original, argv) else ()

    def launch_fix() -> Round:
        return launch(argv, python, workdir, timeout, load, max_tokens, port, model, progress, prompts, ANSWER_TOKENS)

    check.after = launch_fix()
    after_memory = (check.after.free_memory_gib, check.after.total_memory_gib)
    if (
        check.after.outcome == "still failing"
        and failure_of(check.after) != before_failure
        and memory_changed(baseline, after_memory)
    ):
        check.notes.append(machine_changed(baseline, after_memory))
        check.after = launch_fix()
    if check.before:
        check.notes += trade_offs(check.before, check.after)
    if prompts and original and check.after.outcome == "fixed":
        check.reference, check.drift, note = compare_output(
            original, argv, check.after, python, workdir, timeout, model
        )
        check.notes.append(note)
    return check


def fix_port(original: list[str] | None, argv: list[str]) -> int | None:
    """The port the fix names, when the fix is the port: it is checked there, nowhere else."""
    port = flag_value(argv, "--port") if original and "--port" in changed_flags(original, argv) else None
    return int(port) if port is not None else None


def advised_sequences(argv: list[str], original: list[str], report: Report, check: Verification) -> list[str]:
    """A --max-num-seqs fix sized by the KV cache and the load's own request length, not full-length ones."""
    before = check.before
    if before is None:  # the original was not launched: nothing to size the fix by
        return argv
    kv_tokens = before.kv_cache_tokens or report.facts.get("kv_cache_tokens")
    if "--max-num-seqs" not in changed_flags(original, argv) or not kv_tokens or not before.request_tokens:
        return argv
    block = block_size(report.backend or before.backend)
    fit = sequences_that_fit(int(kv_tokens), before.request_tokens, block)
    check.notes.append(
        f"--max-num-seqs {fit}: the KV cache holds {int(kv_tokens):,} tokens ({int(kv_tokens) // block} "
        f"blocks of {block}, one kept free); a request of this load takes {before.request_tokens:,} "
        f"tokens (the log's advice, {flag_value(argv, '--max-num-seqs')}, assumed full-length requests)"
    )
    return apply(argv, {"--max-num-seqs": str(fit)})


def machine_changed(first: tuple[float | None, float | None], second: tuple[float | None, float | None]) -> str:
    def shown(pair: tuple[float | None, float | None]) -> str:
        return "/".join("?" if v is None else f"{v:g}" for v in pair) + " GiB"

    return (
        f"the machine changed, not the flags: free/total memory was {shown(first)}, now {shown(second)}; "
        "launched once more"
    )


def trade_offs(before: Round, after: Round) -> list[str]:
    """Preemption removed at the price of latency is said, with the numbers."""
    if not (before.preemptions and after.preemptions == 0 and before.ttft_p50_s and after.ttft_p50_s):
        return []
    factor = after.ttft_p50_s / before.ttft_p50_s
    if factor < TRADE_OFF_FACTOR:
        return []
    return [
        f"trade-off: preemptions {before.preemptions:g} -> 0, but the median time to first token rose from "
        f"{before.ttft_p50_s:g} s to {after.ttft_p50_s:g} s (x{factor:.1f}; p95 {shown(before.ttft_p95_s)} s -> "
        f"{shown(after.ttft_p95_s)} s)"
    ]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="vllm-advisor verify", description="Relaunch vLLM with the corrected command and confirm the fix."
    )
    parser.add_argument("log", help="the log whose advice to check")
    parser.add_argument("--cmd", help="check this command instead of the corrected one")
    parser.add_argument("--model", help="serve this local copy of the model instead of the path the command names")
    parser.add_argument("--python", help="python of the vLLM environment (or VLLM_ADVISOR_VLLM_PYTHON)")
    parser.add_argument(
        "--timeout",
        type=float,
        help="seconds to wait for readiness (default: twice what the log took to reach its failure, plus a minute; "
        "at least 120, and 300 when the log shows no timestamps)",
    )
    parser.add_argument(
        "--load", type=int, default=0, help="concurrent requests after readiness; the original command is measured too"
    )
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens per request")
    parser.add_argument("--ladder", action="store_true", help="walk the tuning ladder from the corrected command")
    parser.add_argument("--rounds", type=int, default=4, help="ladder rounds at most")
    parser.add_argument("--log-dir", help="where to keep the new vLLM logs (default: a new temporary folder)")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    args = parser.parse_args(argv)
    if threading.current_thread() is not threading.main_thread():  # only the main thread takes signals
        return _check(args)
    # SIGTERM ends a check as Ctrl-C does: each launch's `finally` stops every vLLM process it started.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return _check(args)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _check(args: argparse.Namespace) -> int:
    try:
        try:
            report = pipeline.analyze(args.log, name=args.log, model_dir=args.model)
        except PlanError:  # a model plan cannot read may still serve: the log's own advice is checked
            report = pipeline.analyze(args.log, name=args.log)
        command, python = command_to_check(report, args.cmd), vllm_python(args.python)
        # A line that says how long the wait has lasted, on a terminal only: JSON gets nothing extra.
        progress = sys.stderr if args.format == "text" and sys.stderr.isatty() else None
        if args.timeout is None:
            log = sources.lines(sources.read_chunks(args.log))
            args.timeout = readiness_timeout(log, report.verdict.line if report.failed else None)
        server_args(command, args.model)  # refuse anything but vLLM before launching anything
        # The new logs are kept: they are the evidence the operator may want to read or attach.
        workdir = Path(args.log_dir) if args.log_dir else Path(tempfile.mkdtemp(prefix="vllm-advisor-verify-"))
        workdir.mkdir(parents=True, exist_ok=True)
        if args.ladder:
            original = shlex.split(report.command.original) if report.command.original else None
            limit = report.facts.get("derived_max_model_len")
            results = ladder(
                command,
                ladder_knob(original, command),
                python,
                workdir,
                args.timeout,
                args.rounds,
                args.max_tokens,
                args.load,
                args.model,
                int(limit) if limit else None,
                progress,
            )
            print(render_ladder(results, args.format))
            return exit_code([r.outcome for r in results])
        check = verify(report, command, python, workdir, args.timeout, args.load, args.max_tokens, args.model, progress)
    except (CannotRun, OSError) as error:
        print(f"vllm-advisor verify: could not run: {error}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    print(render(check, args.format))
    if check.after.outcome == "could not run":
        print(f"vllm-advisor verify: could not run: {check.after.note}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    return exit_code([check.after.outcome])


def exit_code(outcomes: list[str]) -> int:
    """0 when a round fixed it; else 3 when one timed out (a slow start proves nothing); else 1."""
    if "fixed" in outcomes:
        return EXIT_FIXED
    return EXIT_TIMED_OUT if "timed out" in outcomes else EXIT_STILL_FAILING


def render(check: Verification, fmt: str, width: int = 80) -> str:
    if fmt == "json":
        launches = {
            name: run and asdict(run) for name, run in (("before", check.before), ("reference", check.reference))
        }
        drift = check.drift and {**asdict(check.drift), "changes_output": check.drift.changes_output}
        return json.dumps({**launches, "after": asdict(check.after), "drift": drift, "notes": check.notes}, indent=2)
    r = check.after
    outcome = f"{r.outcome} ({reason(r)})" if reason(r) else r.outcome
    lines = [f"verify: {outcome}", "  command:", *wrapped(r.command, width, "    ")]
    rows = [
        ("outcome", "outcome"),
        ("startup s", "startup_seconds"),
        ("HTTP", "completion_status"),
        ("KV cache tokens", "kv_cache_tokens"),
        ("TTFT p50 s", "ttft_p50_s"),
        ("TTFT p95 s", "ttft_p95_s"),
        ("tokens/s", "tokens_per_s"),
        ("preemptions", "preemptions"),
        ("free memory GiB", "free_memory_gib"),
        ("total memory GiB", "total_memory_gib"),
    ]
    others = [(name, run) for name, run in (("before", check.before), ("reference", check.reference)) if run]
    runs = [*others, ("after", r)] if others else [("this launch", r)]
    lines.append(("  " + f"{'':<18}" + "".join(f"{name:<16}" for name, _ in runs)).rstrip())
    for label, name in rows:
        lines.append(f"  {label:<18}" + "".join(f"{shown(getattr(run, name)):<16}" for _, run in runs).rstrip())
    lines.append(f"  memory from: {r.memory_from or 'unknown'}")
    lines += [
        textwrap.fill(
            note, width, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False, break_long_words=False
        )
        for note in check.notes
    ]
    lines += [f"  new verdict: {r.verdict.get('phase')} / {r.verdict.get('failure')}", f"  log: {r.log or '-'}"]
    return "\n".join(lines)
