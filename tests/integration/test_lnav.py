"""The shipped lnav format, loaded by a real lnav: its samples pass lnav's check and corpus lines of every era parse."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import ROOT, fixture_path, require_tool

FORMAT = ROOT / "examples" / "lnav" / "vllm_log.json"
FIELDS = "log_level, log_time, process, rank, pid, ip, file, line"
# (fixture, line in the file, level, time without the year lnav adds, process, rank, pid, ip, source file, line)
LINES = [
    # [file.py:N], with each kind of process tag
    ("062", 6, "info", "06-22 02:54:47", None, None, None, None, "gpu_worker.py", 232),
    ("088", 12, "info", "11-29 09:54:31", "APIServer", None, 7869, None, "api_utils.py", 286),
    ("088", 89, "error", "11-29 09:55:27", "EngineCore", None, 8130, None, "core.py", 1510),
    ("088", 35, "warning", "11-29 09:54:56", "VllmWorker-0", None, 8161, None, "vllm.py", 725),
    ("019", 1, "error", "10-25 13:08:43", "EngineCore_DP0", None, 223840, None, "core.py", 708),
    ("065", 1, "error", "06-05 06:18:13", "VllmWorker", 3, 1090, None, "multiproc_executor.py", 470),
    ("067", 2, "info", "03-27 10:29:01", "RayWorkerWrapper", None, 1463574, "192.168.10.60", "worker.py", 267),
    # file.py:N] of older versions
    ("043", 1, "info", "12-16 00:57:56", None, None, None, None, "llm_engine.py", 649),
    ("038", 2, "warning", "06-16 21:24:15", None, None, None, None, "scheduler.py", 1089),
    ("086", 1, "error", "10-23 23:20:26", None, None, None, None, "registry.py", 272),
    ("052", 1, "info", "07-18 12:26:26", "VllmWorkerProcess", None, 3311317, None, "model_runner.py", 1071),
    ("064", 1, "info", "04-15 10:19:39", "RayWorkerWrapper", None, 2711, "████████████", "worker.py", 267),
]


@pytest.fixture(scope="module")
def lnav(tmp_path_factory):
    """Runs a headless lnav whose only installed format is the shipped one, in a HOME of its own."""
    binary = require_tool("lnav", "apt-get install lnav")
    home = tmp_path_factory.mktemp("lnav-home")
    # lnav prefers $XDG_CONFIG_HOME/lnav when set: without it, the format lands in HOME/.lnav.
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("XDG_")}, "HOME": str(home)}
    subprocess.run([binary, "-i", str(FORMAT)], env=env, check=True, capture_output=True, timeout=60)

    def query(sql: str, path) -> list[dict]:
        done = subprocess.run(
            [binary, "-n", "-c", f";{sql}", "-c", ":write-json-to -", str(path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        # A sample that no pattern matches, or any other format error, is reported here and fails the run.
        assert done.returncode == 0 and not done.stderr, done.stderr
        return json.loads(done.stdout)

    return query


def test_the_format_loads_and_reads_a_whole_startup_log(lnav):
    rows = lnav("SELECT log_level, count(*) AS n FROM vllm_log GROUP BY log_level", fixture_path("088"))
    # 088 opens with five lines printed before vLLM's logging starts: they have no level.
    assert {row["log_level"]: row["n"] for row in rows} == {"unknown": 5, "info": 34, "warning": 18, "error": 25}


@pytest.mark.parametrize("case", LINES, ids=[f"{case[0]}:{case[1]}" for case in LINES])
def test_a_corpus_line_gives_its_fields(lnav, case):
    name, number, *expected = case
    rows = lnav(f"SELECT {FIELDS} FROM vllm_log WHERE log_line = {number - 1}", fixture_path(name))
    assert len(rows) == 1, rows
    row = rows[0]
    row["log_time"] = row["log_time"][5:19]  # lnav supplies the year vLLM does not print
    assert list(row.values()) == expected


def test_colour_codes_are_read_through(lnav, tmp_path):
    # vLLM on a terminal colours the process tag and the level; lnav matches the format on the plain text.
    plain = fixture_path("088").read_bytes().split(b"\n")
    coloured = tmp_path / "coloured.log"
    coloured.write_bytes(
        b"\x1b[36m"
        + plain[34].replace(b") ", b")\x1b[0m ", 1)
        + b"\n"
        + plain[88].replace(b"ERROR", b"\x1b[31mERROR\x1b[0m", 1)
        + b"\n"
    )
    rows = lnav(f"SELECT {FIELDS} FROM vllm_log", coloured)
    for row in rows:
        row["log_time"] = row["log_time"][5:19]
    expected = {tuple(case[:2]): list(case[2:]) for case in LINES}
    assert [list(row.values()) for row in rows] == [expected["088", 35], expected["088", 89]]
