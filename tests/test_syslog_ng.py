"""A real syslog-ng with the shipped example configuration feeds a vLLM log to the advisor's Python destination."""
from __future__ import annotations

import json
import os
import site
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT, fixture_path, require_tool

EXAMPLE = ROOT / "examples" / "syslog-ng" / "vllm-advisor.conf"


@pytest.fixture
def syslog_ng() -> str:
    return require_tool("syslog-ng", "apt-get install syslog-ng-core syslog-ng-mod-python")


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def findings(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_kv_cache_finding_reaches_the_output(syslog_ng, tmp_path):
    log, out = tmp_path / "vllm.log", tmp_path / "findings.jsonl"
    log.touch()
    config = tmp_path / "syslog-ng.conf"
    config.write_text(EXAMPLE.read_text().replace("/var/log/vllm/vllm.log", str(log))
                      .replace("/var/log/vllm/findings.jsonl", str(out)))
    # syslog-ng runs its own Python (Debian's): it needs the advisor and its dependencies on its path.
    python_path = os.pathsep.join([str(ROOT), *site.getsitepackages()])
    daemon = subprocess.Popen(
        [syslog_ng, "-F", "-f", str(config), f"--persist-file={tmp_path / 'p.persist'}",
         f"--pidfile={tmp_path / 'pid'}", f"--control={tmp_path / 'ctl'}"],
        env={**os.environ, "PYTHONPATH": python_path}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert wait_for(lambda: out.exists() or daemon.poll() is not None, 15), "the destination never opened"
        assert daemon.poll() is None, daemon.stdout.read().decode()
        with open(log, "ab") as handle:  # a real failing launch, written the way vLLM writes it
            for line in fixture_path("088").open("rb"):
                handle.write(line)
                handle.flush()
        assert wait_for(lambda: any(f["rule"] == "S101" for f in findings(out)), 10), findings(out)
    finally:
        daemon.terminate()
        daemon.wait(15)
    s101 = next(f for f in findings(out) if f["rule"] == "S101")
    # Lines are numbered as messages arrive, and syslog-ng passes no message for the empty line 57:
    # the error on line 89 of the file is the 88th message.
    assert s101["failure"] == "kv_cache_insufficient" and s101["line"] == 88
