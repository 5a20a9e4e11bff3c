"""advisor.live.server without vLLM: process-group cleanup, readiness and /metrics parsing."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
import time

import pytest

from advisor.live import server as live_server

METRICS_TEXT = """\
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="/models/tiny-llama"} 14.0
vllm:kv_cache_usage_perc{engine="0",model_name="/models/tiny-llama"} 0.955
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3"} 2.0
vllm:e2e_request_latency_seconds_count{engine="0"} 8.0
vllm:request_success_total{finished_reason="length"} 6.0
vllm:request_success_total{finished_reason="stop"} 2.0
"""

# A leader whose child ignores SIGTERM, as a wedged engine process would.
STUBBORN_GROUP = """\
import signal, subprocess, sys, time
subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(600)"],
    stdout=sys.stdout)
time.sleep(600)
"""


def test_metrics_sums_label_sets_and_skips_buckets():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(METRICS_TEXT.encode())

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        scraped = live_server.metrics(httpd.server_address[1])
    finally:
        httpd.shutdown()
    assert scraped["vllm:num_preemptions_total"] == 14.0
    assert scraped["vllm:kv_cache_usage_perc"] == 0.955
    assert scraped["vllm:request_success_total"] == 8.0
    assert scraped["vllm:e2e_request_latency_seconds_count"] == 8.0
    assert "vllm:e2e_request_latency_seconds_bucket" not in scraped


def test_server_that_cannot_start_is_reported_as_exited(tmp_path, monkeypatch):
    # The test's own python has no vLLM, so the module import fails at once; it need not wait its turn
    # behind real vLLM launches, so it takes a lock of its own.
    monkeypatch.setattr(live_server, "LAUNCH_LOCK", tmp_path / "launch.lock")
    log = tmp_path / "server.log"
    server = live_server.start(
        sys.executable, ["--model", "nowhere"], log, live_server.free_port(), env={"PYTHONPATH": ""}
    )
    ready = live_server.wait_ready(server, timeout=60)
    live_server.stop(server)
    assert server.lock is None, "stop() releases the launch lock"
    assert ready.state == "exited"
    assert ready.returncode != 0
    assert "vllm" in log.read_text()


def test_stop_kills_children_that_ignore_sigterm(tmp_path):
    log = tmp_path / "group.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-c", STUBBORN_GROUP], stdout=out, start_new_session=True)
    server = live_server.Server(process, [], 0, log)
    deadline = time.monotonic() + 30
    while "up" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(live_server.group_pids(server.pgid)) == 2

    live_server.stop(server, grace=1)

    assert process.returncode is not None
    assert live_server.group_pids(server.pgid) == []


def test_a_second_launch_waits_for_the_first_to_stop(tmp_path, monkeypatch):
    monkeypatch.setattr(live_server, "LAUNCH_LOCK", tmp_path / "launch.lock")
    first = live_server.start(
        sys.executable, ["--model", "nowhere"], tmp_path / "a.log", live_server.free_port(), env={"PYTHONPATH": ""}
    )
    started = []
    waiting = threading.Thread(
        target=lambda: started.append(
            live_server.start(
                sys.executable,
                ["--model", "nowhere"],
                tmp_path / "b.log",
                live_server.free_port(),
                env={"PYTHONPATH": ""},
            )
        )
    )
    waiting.start()
    waiting.join(2)
    assert not started, "the second start must wait for the lock"
    live_server.stop(first)
    waiting.join(30)
    assert started
    live_server.stop(started[0])


def test_a_launch_that_cannot_get_the_lock_fails_instead_of_hanging(tmp_path, monkeypatch):
    # flock does not nest: a caller that already holds the lock would otherwise wait forever.
    monkeypatch.setattr(live_server, "LAUNCH_LOCK", tmp_path / "launch.lock")
    first = live_server.start(
        sys.executable, ["--model", "nowhere"], tmp_path / "a.log", live_server.free_port(), env={"PYTHONPATH": ""}
    )
    try:
        began = time.monotonic()
        with pytest.raises(live_server.LaunchLockTimeout, match="launch lock"):
            live_server.start(sys.executable, [], tmp_path / "b.log", live_server.free_port(), lock_wait=1)
        assert time.monotonic() - began < 10
        assert not (tmp_path / "b.log").exists(), "nothing was launched"
    finally:
        live_server.stop(first)
