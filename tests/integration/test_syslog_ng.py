"""A real syslog-ng with the shipped example configuration feeds a vLLM log to the advisor's Python destination."""

from __future__ import annotations

import os
import site
import subprocess

import pytest
from conftest import ROOT, fixture_path, json_lines, require_tool, wait_for

EXAMPLE = ROOT / "examples" / "syslog-ng" / "vllm-advisor.conf"


@pytest.fixture
def syslog_ng() -> str:
    return require_tool("syslog-ng", "apt-get install syslog-ng-core syslog-ng-mod-python")


def test_kv_cache_finding_reaches_the_output(syslog_ng, tmp_path):
    log, out = tmp_path / "vllm.log", tmp_path / "findings.jsonl"
    log.touch()
    config = tmp_path / "syslog-ng.conf"
    config.write_text(
        EXAMPLE.read_text()
        .replace("/var/log/vllm/vllm.log", str(log))
        .replace("/var/log/vllm/findings.jsonl", str(out))
    )
    # syslog-ng runs its own Python (Debian's): it needs the advisor and its dependencies on its path.
    python_path = os.pathsep.join([str(ROOT), *site.getsitepackages()])
    daemon = subprocess.Popen(
        [
            syslog_ng,
            "-F",
            "-f",
            str(config),
            f"--persist-file={tmp_path / 'p.persist'}",
            f"--pidfile={tmp_path / 'pid'}",
            f"--control={tmp_path / 'ctl'}",
        ],
        env={**os.environ, "PYTHONPATH": python_path},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert wait_for(lambda: out.exists() or daemon.poll() is not None, 15), "the destination never opened"
        assert daemon.poll() is None, daemon.stdout.read().decode()
        with open(log, "ab") as handle:  # a real failing launch, written the way vLLM writes it
            for line in fixture_path("088").open("rb"):
                handle.write(line)
                handle.flush()
        assert wait_for(lambda: any(f["rule"] == "S101" for f in json_lines(out)), 10), json_lines(out)
    finally:
        daemon.terminate()
        daemon.wait(15)
    s101 = next(f for f in json_lines(out) if f["rule"] == "S101")
    # Lines are numbered as messages arrive, and syslog-ng passes no message for the empty line 57:
    # the error on line 89 of the file is the 88th message.
    assert s101["failure"] == "kv_cache_insufficient" and s101["line"] == 88
