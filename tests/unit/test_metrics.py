"""`follow --metrics-port`: Prometheus text format scraped while a fixture is followed."""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from conftest import fixture_path, free_port, sigint_default

from advisor.stream.engine import StreamEngine
from advisor.stream.follow import follow
from advisor.stream.metrics import FollowCounters, serve


def scrape(server, path: str = "/metrics") -> str:
    host, port = server.server_address[:2]
    with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=5) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return response.read().decode()


@pytest.fixture
def served():
    counters = FollowCounters()
    server = serve(counters, "127.0.0.1", 0)  # port 0: a free one
    yield counters, server
    server.shutdown()
    server.server_close()


def test_counters_after_following_a_preempting_server(served):
    counters, server = served
    assert "vllm_advisor_lines_read_total 0\n" in scrape(server)
    log = fixture_path("091").read_bytes()
    lines = io.BytesIO(log).readlines()
    feeder = threading.Thread(target=follow, args=(lines, StreamEngine("091"), io.StringIO(), "ndjson", counters))
    feeder.start()
    feeder.join(30)
    text = scrape(server)
    assert f"vllm_advisor_lines_read_total {len(lines)}\n" in text
    assert 'vllm_advisor_findings_total{rule="R103",severity="warning"} 1\n' in text
    assert 'vllm_advisor_findings_total{rule="H101",severity="info"} 1\n' in text
    assert 'vllm_advisor_recoveries_total{rule="R103"} 1\n' in text  # line 126: 43.2% and none waiting
    assert 'vllm_advisor_last_verdict{run="0",phase="runtime",failure="preemption"} 1\n' in text


def test_loopback_by_default_and_only_metrics(served):
    _, server = served
    assert server.server_address[0] == "127.0.0.1"
    with pytest.raises(urllib.error.HTTPError) as error:
        scrape(server, "/")
    assert error.value.code == 404


def test_scraped_while_the_cli_follows_a_file():
    log, port = fixture_path("091"), free_port()
    lines = len(io.BytesIO(log.read_bytes()).readlines())
    follower = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from advisor.cli import main; sys.exit(main())",
            "follow",
            str(log),
            "--metrics-port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        preexec_fn=sigint_default,
    )
    try:
        deadline, text = time.monotonic() + 30, ""
        while f"vllm_advisor_lines_read_total {lines}\n" not in text and time.monotonic() < deadline:
            time.sleep(0.2)
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            except OSError:  # not listening yet
                continue
        assert f"vllm_advisor_lines_read_total {lines}\n" in text
        assert 'vllm_advisor_last_verdict{run="0",phase="runtime",failure="preemption"} 1' in text
    finally:
        follower.send_signal(signal.SIGINT)  # how a user stops following: the findings so far, exit 1
        assert follower.wait(15) == 1
    assert b'"rule":"R103"' in follower.stdout.read()
