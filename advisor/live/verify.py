"""Live check: relaunch vLLM with the corrected flags, confirm the fix, or walk the tuning ladder."""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from advisor import pipeline
from advisor.command import API_SERVER, apply, wrapped
from advisor.live import server as live_server
from advisor.report.contract import Report
from advisor.rules.remedies import CUDA_BLOCK_SIZE, DEFAULT_BLOCK_SIZE

DEFAULT_PYTHON = Path.home() / ".cache/vllm-advisor/vllm-venv/bin/python"
PREEMPTIONS = "vllm:num_preemptions_total"
EXIT_FIXED, EXIT_STILL_FAILING, EXIT_COULD_NOT_RUN = 0, 1, 2
# Free or total memory that moved by more than this between two launches: the machine changed.
MEMORY_CHANGE = 0.05
# A fix that multiplies the median first-token latency by this much is a trade-off, not a free win.
TRADE_OFF_FACTOR = 2.0


class CannotRun(Exception):
    """The check could not be attempted (no command, no vLLM environment)."""


@dataclass
class Round:
    """One launch of vLLM: what it was given and the figures operators read."""

    command: str
    outcome: str  # fixed | still failing | could not run
    verdict: dict = field(default_factory=dict)
    startup_seconds: float | None = None
    kv_cache_tokens: int | None = None
    completion_status: int | None = None
    ttft_p50_s: float | None = None
    ttft_p95_s: float | None = None
    tokens_per_s: float | None = None
    request_tokens: int | None = None  # prompt plus generated tokens of the load's longest request
    peak_rss_mb: int | None = None
    preemptions: float | None = None
    free_memory_gib: float | None = None  # what vLLM saw free at startup (its log), else measured before
    total_memory_gib: float | None = None
    memory_from: str = ""
    port: int | None = None
    backend: str | None = None
    log: str = ""
    note: str = ""


@dataclass
class Verification:
    """The fix's launch, the original's (with --load, when it served) and what the comparison says."""

    after: Round
    before: Round | None = None
    notes: list[str] = field(default_factory=list)


def vllm_python(option: str | None) -> Path:
    python = Path(option or os.environ.get("VLLM_ADVISOR_VLLM_PYTHON") or DEFAULT_PYTHON)
    if not python.exists():
        raise CannotRun(f"no vLLM environment at {python} (run tools/live/setup_env.sh, or pass --python)")
    return python


def is_api_server(argv: list[str]) -> bool:
    """`python -m vllm.entrypoints.openai.api_server ...`, with any python (python3, a venv's)."""
    return len(argv) >= 3 and Path(argv[0]).name.startswith("python") and argv[1:3] == list(API_SERVER[1:])


def server_args(argv: list[str], model: str | None = None) -> tuple[list[str], str]:
    """A `vllm serve MODEL --flags` or module command -> the api_server's arguments and the served model
    name; `model` replaces the model path the command names (a local copy of the same model).

    Only the vLLM entry point is ever run: anything else in the command is refused.
    """
    if argv[:2] == ["vllm", "serve"] and len(argv) >= 3 and not argv[2].startswith("--"):
        named, flags = argv[2], argv[3:]
    elif is_api_server(argv) and "--model" in argv[3:-1]:
        flags = argv[3:]
        named = flags[flags.index("--model") + 1]
        flags = apply(flags, {"--model": None})
    else:
        raise CannotRun(f"not a 'vllm serve MODEL ...' or '{shlex.join(API_SERVER)} --model MODEL ...' "
                        f"command: {shlex.join(argv)}")
    flags = apply(flags, {"--port": None, "--host": None})
    path = model or named
    served = flags[flags.index("--served-model-name") + 1] if "--served-model-name" in flags else path
    return ["--model", path, *flags], served


def flag_value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else None


def changed_flags(before: list[str], after: list[str]) -> list[str]:
    """The flags whose value the fix changed (or added)."""
    names = {token for token in after if token.startswith("--")}
    return sorted(name for name in names if flag_value(before, name) != flag_value(after, name))


def launch(argv: list[str], python: Path, workdir: Path, timeout: float, load: int = 0, max_tokens: int = 16,
           port: int | None = None, model: str | None = None) -> Round:
    """Start vLLM, wait for readiness, send requests, stop it cleanly, analyse its log.

    `port` is the one the command must serve on (a port fix); else any free one is used."""
    args, served = server_args(argv, model)
    result = Round(command=shlex.join(argv), outcome="still failing")
    if port is not None and not live_server.port_is_free(port):
        result.outcome = "could not run"
        result.note = f"port {port} is in use by another process: the port fix cannot be checked here"
        return result
    log_path = workdir / f"vllm-{int(time.time() * 1000)}.log"
    result.log = str(log_path)
    measured = live_server.node_memory()
    server = live_server.start(python, args, log_path, port or live_server.free_port())
    result.port = server.port
    try:
        ready = live_server.wait_ready(server, timeout)
        result.startup_seconds = round(ready.seconds, 1)
        if ready.state == "ready":
            probe = live_server.complete(server.port, served, "The quick brown fox", max_tokens)
            result.completion_status = probe.status
            answers = send_load(server.port, served, load, max_tokens) if load else [probe]
            if any(a.status != 200 for a in answers):
                result.completion_status = next(a.status for a in answers if a.status != 200)
            measure(result, answers)
            result.preemptions = live_server.metrics(server.port).get(PREEMPTIONS)
    finally:
        live_server.stop(server)
    result.peak_rss_mb = server.peak_rss_bytes // 2**20
    report = pipeline.analyze(log_path, name=log_path.name)
    result.verdict = report.verdict.model_dump()
    result.kv_cache_tokens = report.facts.get("kv_cache_tokens")
    result.backend = report.backend
    record_memory(result, report, measured)
    if result.completion_status == 200 and not report.failed and not result.preemptions:
        result.outcome = "fixed"
    return result


def record_memory(result: Round, report: Report, measured: tuple[float, float] | None) -> None:
    """The free memory vLLM printed at startup, when its log shows it; else the node's, measured just before."""
    free, total = report.facts.get("free_gpu_gib"), report.facts.get("total_gpu_gib")
    if free is not None and total:
        result.free_memory_gib, result.total_memory_gib, result.memory_from = free, total, "vLLM's log"
    elif measured:
        result.free_memory_gib, result.total_memory_gib = measured
        result.memory_from = "NUMA node 0, measured before the launch"


def memory_of(report: Report) -> tuple[float | None, float | None]:
    return report.facts.get("free_gpu_gib"), report.facts.get("total_gpu_gib")


def memory_changed(first: tuple[float | None, float | None], second: tuple[float | None, float | None]) -> bool:
    return any(a and b and abs(a - b) > MEMORY_CHANGE * max(a, b) for a, b in zip(first, second))


def failure_of(result: Round) -> str:
    return "none" if result.outcome == "fixed" else str(result.verdict.get("failure"))


def reason(result: Round) -> str:
    """Why a round failed, in the words of its log or its metrics."""
    if result.outcome == "fixed":
        return ""
    if result.note:
        return result.note
    if result.verdict.get("failure") not in (None, "none"):
        return f"{result.verdict['phase']} {result.verdict['failure']}"
    if result.preemptions:
        return f"{result.preemptions:g} preemptions"
    return f"HTTP {result.completion_status}" if result.completion_status else "no answer"


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile: a value that was measured, not an interpolation."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def measure(result: Round, answers: list[live_server.Completion]) -> None:
    """First-token latency p50 and p95, generated tokens per second over the whole batch, request length."""
    firsts = [a.first_token_s for a in answers if a.first_token_s is not None]
    if firsts:
        result.ttft_p50_s = round(percentile(firsts, 0.5), 3)
        result.ttft_p95_s = round(percentile(firsts, 0.95), 3)
    wall = max((a.seconds for a in answers), default=0)
    if wall > 0:
        result.tokens_per_s = round(sum(a.tokens for a in answers) / wall, 1)
    lengths = [a.prompt_tokens + a.tokens for a in answers if a.status == 200]
    result.request_tokens = max(lengths) if lengths else None


def send_load(port: int, model: str, count: int, max_tokens: int) -> list[live_server.Completion]:
    """Concurrent requests with distinct prompts (identical ones are absorbed by the prefix cache)."""
    prompts = [f"Request {i}: " + " ".join(f"w{(i * 7919 + j) % 997}" for j in range(60)) for i in range(count)]
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda p: live_server.complete(port, model, p, max_tokens, ignore_eos=True), prompts))


def sequences_that_fit(kv_tokens: int, request_tokens: int, block: int) -> int:
    """Requests of this length the KV cache holds whole: its blocks, less the null block vLLM keeps,
    over the blocks one request takes."""
    return max(1, (kv_tokens // block - 1) // math.ceil(request_tokens / block))


def command_to_check(report: Report, user_command: str | None) -> list[str]:
    if user_command:
        return shlex.split(user_command)
    command = report.command.corrected or (report.command.original if not report.failed else None)
    if not command or command.startswith("--"):  # the flag change alone: the log shows no command
        raise CannotRun("the log does not show the launch command; pass it with --cmd \"vllm serve MODEL ...\"")
    return shlex.split(command)


def verify(report: Report, argv: list[str], python: Path, workdir: Path, timeout: float, load: int = 0,
           max_tokens: int = 64, model: str | None = None) -> Verification:
    """Launch the fix (and, with a load, the original command first when its log shows it serving);
    a verdict that changes while the machine's memory changed too is retried once."""
    original = shlex.split(report.command.original) if report.command.original else None
    check = Verification(after=Round(command=shlex.join(argv), outcome="could not run"))
    baseline = memory_of(report)
    before_failure = report.verdict.failure
    if model:
        check.notes.append(f"model served from {model}")
    if load and original and original != argv and report.verdict.phase != "startup":
        check.before = launch(original, python, workdir, timeout, load, max_tokens, model=model)
        baseline = (check.before.free_memory_gib, check.before.total_memory_gib)
        before_failure = failure_of(check.before)
        argv = advised_sequences(argv, original, report, check)
    port = fix_port(original, argv)
    check.after = launch(argv, python, workdir, timeout, load, max_tokens, port=port, model=model)
    after_memory = (check.after.free_memory_gib, check.after.total_memory_gib)
    if (check.after.outcome == "still failing" and failure_of(check.after) != before_failure
            and memory_changed(baseline, after_memory)):
        check.notes.append(machine_changed(baseline, after_memory))
        check.after = launch(argv, python, workdir, timeout, load, max_tokens, port=port, model=model)
    if check.before:
        check.notes += trade_offs(check.before, check.after)
    return check


def fix_port(original: list[str] | None, argv: list[str]) -> int | None:
    """The port the fix names, when the fix is the port: it is checked there, nowhere else."""
    if original and "--port" in changed_flags(original, argv):
        return int(flag_value(argv, "--port"))
    return None


def advised_sequences(argv: list[str], original: list[str], report: Report, check: Verification) -> list[str]:
    """A --max-num-seqs fix sized by the KV cache and the load's own request length, not full-length ones."""
    before = check.before
    kv_tokens = before.kv_cache_tokens or report.facts.get("kv_cache_tokens")
    if "--max-num-seqs" not in changed_flags(original, argv) or not kv_tokens or not before.request_tokens:
        return argv
    block = DEFAULT_BLOCK_SIZE.get(report.backend or before.backend, CUDA_BLOCK_SIZE)
    fit = sequences_that_fit(int(kv_tokens), before.request_tokens, block)
    check.notes.append(f"--max-num-seqs {fit}: the KV cache holds {int(kv_tokens):,} tokens ({int(kv_tokens) // block} "
                       f"blocks of {block}, one kept free); a request of this load takes {before.request_tokens:,} "
                       f"tokens (the log's advice, {flag_value(argv, '--max-num-seqs')}, assumed full-length requests)")
    return apply(argv, {"--max-num-seqs": str(fit)})


def machine_changed(first: tuple[float | None, float | None], second: tuple[float | None, float | None]) -> str:
    def shown(pair):
        return "/".join("?" if v is None else f"{v:g}" for v in pair) + " GiB"
    return (f"the machine changed, not the flags: free/total memory was {shown(first)}, now {shown(second)}; "
            "launched once more")


def trade_offs(before: Round, after: Round) -> list[str]:
    """Preemption removed at the price of latency is said, with the numbers."""
    if not (before.preemptions and after.preemptions == 0 and before.ttft_p50_s and after.ttft_p50_s):
        return []
    factor = after.ttft_p50_s / before.ttft_p50_s
    if factor < TRADE_OFF_FACTOR:
        return []
    return [f"trade-off: preemptions {before.preemptions:g} -> 0, but the median time to first token rose from "
            f"{before.ttft_p50_s:g} s to {after.ttft_p50_s:g} s (x{factor:.1f}; p95 {before.ttft_p95_s:g} s -> "
            f"{after.ttft_p95_s:g} s)"]


def ladder(start: list[str], knob: str, python: Path, workdir: Path, timeout: float, rounds: int,
           max_tokens: int, load: int = 0, model: str | None = None, model_limit: int | None = None) -> list[Round]:
    """Raise the fix's knob (--max-model-len, or --max-num-seqs for a concurrency fix) step by step while
    the server stays fixed, never past the model's length limit; stop at the first round that fails
    (a failure while the machine's memory changed is launched once more). A --max-num-seqs ladder goes
    from the log's advice to what the load's requests fit in the KV cache, then on up."""
    results, argv = [], start
    for _ in range(rounds):
        result = launch(argv, python, workdir, timeout, load=load or _sequences(argv), max_tokens=max_tokens,
                        model=model)
        previous = results[-1] if results else None
        if (previous and previous.outcome == "fixed" and result.outcome != "fixed"
                and memory_changed((previous.free_memory_gib, previous.total_memory_gib),
                                   (result.free_memory_gib, result.total_memory_gib))):
            result = launch(argv, python, workdir, timeout, load=load or _sequences(argv), max_tokens=max_tokens,
                            model=model)
            result.note = "launched twice: the machine's memory changed"
        results.append(result)
        if result.outcome != "fixed":
            break
        raised = _raise(argv, knob, model_limit)
        if knob == "--max-num-seqs" and result.kv_cache_tokens and result.request_tokens and len(results) == 1:
            # The log's advice assumed full-length requests; this load's own fit is the next step, if larger.
            fit = sequences_that_fit(result.kv_cache_tokens, result.request_tokens, block_tokens(result))
            if fit > int(flag_value(raised, knob)):
                raised = apply(argv, {knob: str(fit)})
        if raised == argv:
            break  # at the limit: nothing further to try
        argv = raised
    return results


def block_tokens(result: Round) -> int:
    """The KV block size of the backend the round's log names (128 on the CPU backend, 16 on CUDA)."""
    return DEFAULT_BLOCK_SIZE.get(result.backend, CUDA_BLOCK_SIZE)


def _sequences(argv: list[str]) -> int:
    """Concurrent requests for a round: the sequence limit, kept small enough for this machine."""
    limit = int(flag_value(argv, "--max-num-seqs") or 4)
    return max(1, min(limit, 16))


def _raise(argv: list[str], flag: str, model_limit: int | None = None) -> list[str]:
    current = flag_value(argv, flag)
    if flag == "--max-model-len":
        step = math.ceil(int(current or 1024) * 1.25 / 1024) * 1024
        step = min(step, model_limit) if model_limit else step
    elif flag == "--max-num-seqs":
        value = int(current or 4)
        step = value + max(1, value // 2)
    else:
        raise ValueError(f"the ladder does not raise {flag}")
    return apply(argv, {flag: str(step)})


def ladder_knob(original: list[str] | None, argv: list[str]) -> str:
    """The fix's knob when it is one the ladder raises; else the length."""
    changed = changed_flags(original, argv) if original else []
    return "--max-num-seqs" if "--max-num-seqs" in changed else "--max-model-len"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="vllm-advisor verify",
                                     description="Relaunch vLLM with the corrected command and confirm the fix.")
    parser.add_argument("log", help="the log whose advice to check")
    parser.add_argument("--cmd", help="check this command instead of the corrected one")
    parser.add_argument("--model", help="serve this local copy of the model instead of the path the command names")
    parser.add_argument("--python", help="python of the vLLM environment (or VLLM_ADVISOR_VLLM_PYTHON)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for readiness")
    parser.add_argument("--load", type=int, default=0,
                        help="concurrent requests after readiness; the original command is measured too")
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens per request")
    parser.add_argument("--ladder", action="store_true", help="walk the tuning ladder from the corrected command")
    parser.add_argument("--rounds", type=int, default=4, help="ladder rounds at most")
    parser.add_argument("--log-dir", help="where to keep the new vLLM logs (default: a new temporary folder)")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    args = parser.parse_args(argv)
    try:
        report = pipeline.analyze(args.log, name=args.log)
        command, python = command_to_check(report, args.cmd), vllm_python(args.python)
        server_args(command, args.model)  # refuse anything but vLLM before launching anything
        # The new logs are kept: they are the evidence the operator may want to read or attach.
        workdir = Path(args.log_dir) if args.log_dir else Path(tempfile.mkdtemp(prefix="vllm-advisor-verify-"))
        workdir.mkdir(parents=True, exist_ok=True)
        if args.ladder:
            original = shlex.split(report.command.original) if report.command.original else None
            limit = report.facts.get("derived_max_model_len")
            results = ladder(command, ladder_knob(original, command), python, workdir, args.timeout, args.rounds,
                             args.max_tokens, args.load, args.model, int(limit) if limit else None)
            print(render_ladder(results, args.format))
            return EXIT_FIXED if any(r.outcome == "fixed" for r in results) else EXIT_STILL_FAILING
        check = verify(report, command, python, workdir, args.timeout, args.load, args.max_tokens, args.model)
    except (CannotRun, OSError) as error:
        print(f"vllm-advisor verify: could not run: {error}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    print(render(check, args.format))
    if check.after.outcome == "could not run":
        print(f"vllm-advisor verify: could not run: {check.after.note}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    return EXIT_FIXED if check.after.outcome == "fixed" else EXIT_STILL_FAILING


def _shown(value) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def render(check: Verification, fmt: str, width: int = 80) -> str:
    if fmt == "json":
        return json.dumps({"before": check.before and asdict(check.before), "after": asdict(check.after),
                           "notes": check.notes}, indent=2)
    r = check.after
    outcome = f"{r.outcome} ({reason(r)})" if reason(r) else r.outcome
    lines = [f"verify: {outcome}", "  command:", *wrapped(r.command, width, "    ")]
    rows = [("outcome", "outcome"), ("startup s", "startup_seconds"), ("HTTP", "completion_status"),
            ("KV cache tokens", "kv_cache_tokens"), ("TTFT p50 s", "ttft_p50_s"), ("TTFT p95 s", "ttft_p95_s"),
            ("tokens/s", "tokens_per_s"), ("preemptions", "preemptions"), ("free memory GiB", "free_memory_gib"),
            ("total memory GiB", "total_memory_gib")]
    runs = [("before", check.before), ("after", r)] if check.before else [("this launch", r)]
    lines.append(("  " + f"{'':<18}" + "".join(f"{name:<16}" for name, _ in runs)).rstrip())
    for label, name in rows:
        lines.append(f"  {label:<18}" + "".join(f"{_shown(getattr(run, name)):<16}" for _, run in runs).rstrip())
    lines.append(f"  memory from: {r.memory_from or 'unknown'}")
    lines += [f"  {note}" for note in check.notes]
    lines += [f"  new verdict: {r.verdict.get('phase')} / {r.verdict.get('failure')}", f"  log: {r.log or '-'}"]
    return "\n".join(lines)


def render_ladder(results: list[Round], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([asdict(r) for r in results], indent=2)
    rows = ["round  outcome        KV tokens  TTFT p50 s  tokens/s  peak RSS MB  why / command"]
    for i, r in enumerate(results, 1):
        rows.append(f"{i:>5}  {r.outcome:<13}  {_shown(r.kv_cache_tokens):>9}  {_shown(r.ttft_p50_s):>10}  "
                    f"{_shown(r.tokens_per_s):>8}  {_shown(r.peak_rss_mb):>11}  {reason(r) or r.note or 'ok'}")
        rows.append(f"{'':>5}  {r.command}")
    good = [r for r in results if r.outcome == "fixed"]
    rows.append(f"last good command: {good[-1].command}" if good else "no round succeeded")
    return "\n".join(rows)
