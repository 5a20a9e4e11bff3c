"""No loss: a writer process rotates, removes or truncates the log while `vllm-advisor follow` reads it;
every line written is read exactly once, and each launch's finding sits on the line it was written to."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from conftest import ROOT, fixture_path, free_port, sigint_default

ADVISOR = [sys.executable, "-c", "import sys; from advisor.cli import main; sys.exit(main())"]
WRITER = ROOT / "tests" / "helpers" / "rotating_writer.py"
LAUNCHES = 8
EVERY = 400  # lines between rotations: they fall mid-launch, between a run's startup and its error


def lines_read(port: int) -> int | None:
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except OSError:  # not listening yet
        return None
    return int(next(line for line in text.splitlines() if line.startswith("vllm_advisor_lines_read_total ")).split()[1])


# logrotate's default (rename) in every run, the other modes under -m exhaustive (.ci/run).
@pytest.mark.parametrize(
    "mode", ["rename", *(pytest.param(mode, marks=pytest.mark.exhaustive) for mode in ("remove", "truncate"))]
)
def test_every_line_read_once_across_rotation(tmp_path, mode):
    # 088: a real vLLM 0.32 launch that fails on line 89 (S101), 182 lines; written 8 times, 8 runs.
    launch = fixture_path("088")
    per_launch = launch.read_bytes().count(b"\n")
    total, log, port = per_launch * LAUNCHES, tmp_path / "vllm.log", free_port()
    follower = subprocess.Popen(
        [*ADVISOR, "follow", str(log), "--format", "ndjson", "--metrics-port", str(port)],
        preexec_fn=sigint_default,
        stdout=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while lines_read(port) is None and time.monotonic() < deadline:  # following before the first line
            time.sleep(0.1)
        writer = subprocess.run(
            [sys.executable, str(WRITER), str(log), mode, str(launch), str(LAUNCHES), str(EVERY)], timeout=60
        )
        assert writer.returncode == 0
        deadline, read = time.monotonic() + 15, None
        while read != total and time.monotonic() < deadline:
            time.sleep(0.2)
            read = lines_read(port)
        time.sleep(0.5)  # long enough for a line read twice to show
        assert lines_read(port) == total
    finally:
        follower.send_signal(signal.SIGINT)
        follower.wait(15)
    records = [json.loads(line) for line in follower.stdout.read().decode().splitlines()]
    found = [(r["run"], r["line"]) for r in records if r["event"] == "finding" and r["rule"] == "S101"]
    # A line skipped or read twice would shift every later line number and run.
    assert found == [(k, k * per_launch + 89) for k in range(LAUNCHES)]
    if mode == "rename":  # the advisor only reads: the rotated files hold exactly what was written
        rotated = [*sorted(tmp_path.glob("vllm.log.*"), key=lambda p: int(p.suffix[1:])), log]
        assert b"".join(p.read_bytes() for p in rotated) == launch.read_bytes() * LAUNCHES
