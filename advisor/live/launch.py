"""One launch of vLLM for the live check: its arguments, the requests, the figures, the new verdict."""

from __future__ import annotations

import math
import os
import shlex
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from advisor import pipeline
from advisor.command import API_SERVER, apply
from advisor.live import server as live_server
from advisor.report.contract import Report
from advisor.timeline.kinds import KV_SIZING_KINDS

DEFAULT_PYTHON = Path.home() / ".cache/vllm-advisor/vllm-venv/bin/python"


PREEMPTIONS = "vllm:num_preemptions_total"


# Free or total memory that moved by more than this between two launches: the machine changed.
MEMORY_CHANGE = 0.05


class CannotRun(Exception):
    """The check could not be attempted (no command, no vLLM environment)."""


@dataclass
class Round:
    """One launch of vLLM: what it was given and the figures operators read."""

    command: str
    outcome: str  # fixed | still failing | timed out | could not run
    verdict: dict[str, Any] = field(default_factory=dict)
    startup_seconds: float | None = None
    kv_cache_tokens: int | float | None = None
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
    answers: list[list[tuple[str, float]]] = field(default_factory=list)  # greedy (token, logprob) per prompt


def default_vllm_python() -> Path:
    """The vLLM environment's python: $VLLM_ADVISOR_VLLM_PYTHON, or the one tools/live/setup_env.sh builds."""
    return Path(os.environ.get("VLLM_ADVISOR_VLLM_PYTHON") or DEFAULT_PYTHON)


def vllm_python(option: str | None) -> Path:
    python = Path(option) if option else default_vllm_python()
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
        raise CannotRun(
            f"not a 'vllm serve MODEL ...' or '{shlex.join(API_SERVER)} --model MODEL ...' command: {shlex.join(argv)}"
        )
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


def launch(
    argv: list[str],
    python: Path,
    workdir: Path,
    timeout: float,
    load: int = 0,
    max_tokens: int = 16,
    port: int | None = None,
    model: str | None = None,
    progress: TextIO | None = None,
    prompts: tuple[str, ...] = (),
    answer_tokens: int = 16,
) -> Round:
    """Start vLLM, wait for readiness, send requests, stop it cleanly, analyse its log.

    `port` is the one the command must serve on (a port fix); else any free one is used. `progress`, a
    terminal, is shown how long the wait has lasted and the stage the new log has reached. Each of
    `prompts` is answered greedily, with log-probabilities, before the load."""
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
        waiting = Waiting(log_path, progress) if progress is not None else None
        ready = live_server.wait_ready(server, timeout, waiting)
        if waiting is not None:
            waiting.clear()
        result.startup_seconds = round(ready.seconds, 1)
        if ready.state == "timeout":
            result.outcome = "timed out"
        if ready.state == "ready":
            result.answers = [live_server.greedy(server.port, served, p, answer_tokens) for p in prompts]
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
    result.verdict = asdict(report.verdict)
    result.kv_cache_tokens = report.facts.get("kv_cache_tokens")
    result.backend = report.backend
    record_memory(result, report, measured)
    if result.outcome == "timed out":
        # Still starting when the wait ran out: a slow machine, not a fix that failed.
        result.note = f"not ready after {timeout:g} s; its log had reached {stage_reached(report)}"
    elif result.completion_status == 200 and not report.failed and not result.preemptions:
        result.outcome = "fixed"
    return result


class Waiting:
    """One line on a terminal, rewritten in place: the seconds waited and the stage the log has reached."""

    EVERY_SECONDS = 5.0  # the log is analysed again at most this often

    def __init__(self, log_path: Path, terminal: TextIO):
        self.log_path, self.terminal, self.shown_at = log_path, terminal, -math.inf

    def __call__(self, seconds: float) -> None:
        if seconds - self.shown_at < self.EVERY_SECONDS:
            return
        self.shown_at = seconds
        stage = stage_reached(pipeline.analyze(self.log_path, name=self.log_path.name))
        self.terminal.write(f"\r  waiting for vLLM: {seconds:.0f} s, {stage}\x1b[K")
        self.terminal.flush()

    def clear(self) -> None:
        self.terminal.write("\r\x1b[K")
        self.terminal.flush()


def stage_reached(report: Report) -> str:
    """The start-up stage a log shows last, in an operator's words."""
    stage = "loading the model"
    for event in report.events:
        if event.kind == "weights":
            stage = "the weights loaded"
        elif event.kind in KV_SIZING_KINDS:
            stage = "profiling and KV cache sizing"
        elif event.kind == "graph_capture_start":
            stage = "CUDA graph capture"
    return stage


def record_memory(result: Round, report: Report, measured: tuple[float, float] | None) -> None:
    """The free memory vLLM printed at startup, when its log shows it; else the node's, measured just before."""
    free, total = report.facts.get("free_gpu_gib"), report.facts.get("total_gpu_gib")
    if free is not None and total:
        result.free_memory_gib, result.total_memory_gib, result.memory_from = free, total, "vLLM's log"
    elif measured:
        result.free_memory_gib, result.total_memory_gib = measured
        result.memory_from = "NUMA node 0, measured before the launch"


def memory_changed(first: tuple[float | None, float | None], second: tuple[float | None, float | None]) -> bool:
    return any(a and b and abs(a - b) > MEMORY_CHANGE * max(a, b) for a, b in zip(first, second, strict=True))


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


def shown(value: object) -> str:
    """A figure as the reports print it: '-' when unknown."""
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
