"""Live check: relaunch vLLM with the corrected flags, confirm the fix, or walk the tuning ladder."""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from advisor import pipeline
from advisor.command import apply
from advisor.live import server as live_server
from advisor.report.contract import Report

DEFAULT_PYTHON = Path.home() / ".cache/vllm-advisor/vllm-venv/bin/python"
PREEMPTIONS = "vllm:num_preemptions_total"
EXIT_FIXED, EXIT_STILL_FAILING, EXIT_COULD_NOT_RUN = 0, 1, 2
STARTUP_FAILURES = {"startup"}


class CannotRun(Exception):
    """The check could not be attempted (no command, no vLLM environment)."""


@dataclass
class Round:
    """One launch of vLLM: what it was given and the figures operators read."""

    command: str
    outcome: str  # fixed | still failing | could not run
    verdict: dict = field(default_factory=dict)
    startup_seconds: float | None = None
    kv_cache_tokens: int | float | None = None
    completion_status: int | None = None
    first_token_s: float | None = None
    tokens_per_s: float | None = None
    peak_rss_mb: int | None = None
    preemptions: float | None = None
    log: str = ""


def vllm_python(option: str | None) -> Path:
    python = Path(option or os.environ.get("VLLM_ADVISOR_VLLM_PYTHON") or DEFAULT_PYTHON)
    if not python.exists():
        raise CannotRun(f"no vLLM environment at {python} (run tools/live/setup_env.sh, or pass --python)")
    return python


def server_args(argv: list[str]) -> tuple[list[str], str]:
    """`vllm serve MODEL --flags` -> the api_server's arguments and the served model name.

    Only the vLLM entry point is ever run: anything else in the command is refused.
    """
    if argv[:2] != ["vllm", "serve"] or len(argv) < 3 or argv[2].startswith("--"):
        raise CannotRun(f"not a 'vllm serve MODEL ...' command: {shlex.join(argv)}")
    flags = apply(argv[3:], {"--port": None, "--host": None})
    model = argv[2]
    served = flags[flags.index("--served-model-name") + 1] if "--served-model-name" in flags else model
    return ["--model", model, *flags], served


def launch(argv: list[str], python: Path, workdir: Path, timeout: float,
           load: int = 0, max_tokens: int = 16) -> Round:
    """Start vLLM, wait for readiness, send requests, stop it cleanly, analyse its log."""
    args, model = server_args(argv)
    log_path = workdir / f"vllm-{int(time.time() * 1000)}.log"
    server = live_server.start(python, args, log_path, live_server.free_port())
    result = Round(command=shlex.join(argv), outcome="still failing", log=str(log_path))
    try:
        ready = live_server.wait_ready(server, timeout)
        result.startup_seconds = round(ready.seconds, 1)
        if ready.state == "ready":
            probe = live_server.complete(server.port, model, "The quick brown fox", max_tokens)
            result.completion_status = probe.status
            answers = send_load(server.port, model, load, max_tokens) if load else [probe]
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
    if result.completion_status == 200 and not report.failed and not result.preemptions:
        result.outcome = "fixed"
    return result


def reason(result: Round) -> str:
    """Why a round failed, in the words of its log or its metrics."""
    if result.outcome == "fixed":
        return ""
    if result.verdict.get("failure") not in (None, "none"):
        return f"{result.verdict['phase']} {result.verdict['failure']}"
    if result.preemptions:
        return f"{result.preemptions:g} preemptions"
    return f"HTTP {result.completion_status}" if result.completion_status else "no answer"


def measure(result: Round, answers: list[live_server.Completion]) -> None:
    """Mean first-token latency, and generated tokens per second over the whole batch."""
    firsts = [a.first_token_s for a in answers if a.first_token_s is not None]
    if firsts:
        result.first_token_s = round(sum(firsts) / len(firsts), 3)
    wall = max((a.seconds for a in answers), default=0)
    if wall > 0:
        result.tokens_per_s = round(sum(a.tokens for a in answers) / wall, 1)


def send_load(port: int, model: str, count: int, max_tokens: int) -> list[live_server.Completion]:
    """Concurrent requests with distinct prompts (identical ones are absorbed by the prefix cache)."""
    prompts = [f"Request {i}: " + " ".join(f"w{(i * 7919 + j) % 997}" for j in range(60)) for i in range(count)]
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda p: live_server.complete(port, model, p, max_tokens, ignore_eos=True), prompts))


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def command_to_check(report: Report, user_command: str | None) -> list[str]:
    if user_command:
        return shlex.split(user_command)
    corrected = report.command.corrected
    if not corrected or not corrected.startswith("vllm serve"):
        raise CannotRun("the log does not show the launch command; pass it with --cmd \"vllm serve MODEL ...\"")
    return shlex.split(corrected)


def ladder(start: list[str], python: Path, workdir: Path, timeout: float, rounds: int,
           max_tokens: int) -> list[Round]:
    """Raise --max-model-len step by step from the corrected value; after its first failure, go back
    to the last good length and raise --max-num-seqs under a matching load; stop at that knob's
    first failure. Each round is judged with as many concurrent requests as sequences allowed."""
    results, argv, knob = [], start, "--max-model-len"
    for _ in range(rounds):
        result = launch(argv, python, workdir, timeout, load=_sequences(argv), max_tokens=max_tokens)
        results.append(result)
        if result.outcome == "fixed":
            argv = _raise(argv, knob)
        elif knob == "--max-model-len" and len(results) > 1:
            knob = "--max-num-seqs"
            argv = _raise(shlex.split(results[-2].command), knob)
        else:
            break
    return results


def _sequences(argv: list[str]) -> int:
    """Concurrent requests for a round: the sequence limit, kept small enough for this machine."""
    limit = int(argv[argv.index("--max-num-seqs") + 1]) if "--max-num-seqs" in argv else 4
    return max(1, min(limit, 16))


def _raise(argv: list[str], flag: str) -> list[str]:
    if flag == "--max-model-len":
        current = int(argv[argv.index(flag) + 1]) if flag in argv else 1024
        step = math.ceil(current * 1.25 / 1024) * 1024
    else:
        step = 2 * int(argv[argv.index(flag) + 1]) if flag in argv else 8
    return apply(argv, {flag: str(step)})


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="vllm-advisor verify",
                                     description="Relaunch vLLM with the corrected command and confirm the fix.")
    parser.add_argument("log", help="the log whose advice to check")
    parser.add_argument("--cmd", help="check this command instead of the corrected one")
    parser.add_argument("--python", help="python of the vLLM environment (or VLLM_ADVISOR_VLLM_PYTHON)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for readiness")
    parser.add_argument("--load", type=int, default=0, help="concurrent requests to send after readiness")
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens per request")
    parser.add_argument("--ladder", action="store_true", help="walk the tuning ladder from the corrected command")
    parser.add_argument("--rounds", type=int, default=4, help="ladder rounds at most")
    parser.add_argument("--log-dir", help="where to keep the new vLLM logs (default: a new temporary folder)")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    args = parser.parse_args(argv)
    try:
        report = pipeline.analyze(args.log, name=args.log)
        command, python = command_to_check(report, args.cmd), vllm_python(args.python)
        # The new logs are kept: they are the evidence the operator may want to read or attach.
        workdir = Path(args.log_dir) if args.log_dir else Path(tempfile.mkdtemp(prefix="vllm-advisor-verify-"))
        workdir.mkdir(parents=True, exist_ok=True)
        if args.ladder:
            results = ladder(command, python, workdir, args.timeout, args.rounds, args.max_tokens)
        else:
            results = [launch(command, python, workdir, args.timeout, args.load, args.max_tokens)]
        print(render(results, args.format, args.ladder))
    except CannotRun as error:
        print(f"vllm-advisor verify: could not run: {error}")
        return EXIT_COULD_NOT_RUN
    except OSError as error:
        print(f"vllm-advisor verify: could not run: {error}")
        return EXIT_COULD_NOT_RUN
    good = [r for r in results if r.outcome == "fixed"]
    return EXIT_FIXED if (good if args.ladder else results[0].outcome == "fixed") else EXIT_STILL_FAILING


def render(results: list[Round], fmt: str, is_ladder: bool) -> str:
    if fmt == "json":
        return json.dumps([asdict(r) for r in results], indent=2)
    if not is_ladder:
        r = results[0]
        verdict = f"{r.verdict.get('phase')} / {r.verdict.get('failure')}"
        outcome = f"{r.outcome} ({reason(r)})" if reason(r) else r.outcome
        return "\n".join([f"verify: {outcome}", f"  command: {r.command}",
                          f"  startup: {r.startup_seconds} s, completion: HTTP {r.completion_status}, "
                          f"KV cache: {r.kv_cache_tokens} tokens, preemptions: {r.preemptions}",
                          f"  new verdict: {verdict}", f"  log: {r.log}"])
    rows = ["round  outcome        KV tokens  first token s  tokens/s  peak RSS MB  why / command"]
    for i, r in enumerate(results, 1):
        rows.append(f"{i:>5}  {r.outcome:<13}  {r.kv_cache_tokens or '-':>9}  {r.first_token_s or '-':>13}  "
                    f"{r.tokens_per_s or '-':>8}  {r.peak_rss_mb or '-':>11}  {reason(r) or 'ok'}")
        rows.append(f"{'':>5}  {r.command}")
    good = [r for r in results if r.outcome == "fixed"]
    rows.append(f"last good command: {good[-1].command}" if good else "no round succeeded")
    return "\n".join(rows)
