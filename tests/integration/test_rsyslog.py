"""A real rsyslogd with the shipped example configuration pipes a vLLM log to `vllm-advisor follow` (omprog)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, fixture_path, json_lines, require_tool, wait_for

EXAMPLE = ROOT / "examples" / "rsyslog" / "vllm-advisor.conf"


@pytest.fixture
def rsyslogd() -> str:
    return require_tool("rsyslogd", "apt-get install rsyslog (it replaces syslog-ng-core; .ci/run has both)")


def test_kv_cache_finding_reaches_the_output_file(rsyslogd, tmp_path):
    log, out, work = tmp_path / "vllm.log", tmp_path / "findings.jsonl", tmp_path / "work"
    log.touch()
    work.mkdir()
    advisor = Path(sys.executable).with_name("vllm-advisor")  # the one this test run installed
    assert advisor.exists(), advisor
    config = tmp_path / "rsyslog.conf"
    # Its own work directory (imfile's state files), so the test never touches the system's rsyslog.
    config.write_text(
        f'global(workDirectory="{work}")\n'
        + EXAMPLE.read_text()
        .replace("/opt/vllm-advisor/venv/bin/vllm-advisor", str(advisor))
        .replace("/var/log/vllm/vllm.log", str(log))
        .replace("/var/log/vllm/findings.jsonl", str(out))
    )
    check = subprocess.run([rsyslogd, "-N1", "-f", str(config)], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0 and "error" not in check.stderr.lower(), check.stderr
    console = tmp_path / "rsyslogd.out"
    with console.open("w") as output:
        daemon = subprocess.Popen(
            [rsyslogd, "-n", "-f", str(config), "-i", str(tmp_path / "rsyslogd.pid")],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        with open(log, "ab") as handle:  # a real failing launch, written the way vLLM writes it
            for line in fixture_path("088").open("rb"):
                handle.write(line)
                handle.flush()
        assert wait_for(lambda: any(f["rule"] == "S101" for f in json_lines(out)) or daemon.poll() is not None, 15), (
            json_lines(out)
        )
        assert daemon.poll() is None, console.read_text()
    finally:
        daemon.terminate()  # omprog then closes the advisor's stdin and waits for it to exit
        try:
            daemon.wait(15)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
    s101 = [f for f in json_lines(out) if f["rule"] == "S101"]
    # imfile passes no message for the empty line 57: the error on line 89 of the file is the 88th line read.
    assert [(f["event"], f["failure"], f["line"]) for f in s101] == [("finding", "kv_cache_insufficient", 88)]
