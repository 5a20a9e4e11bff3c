"""`--prometheus URL --since D --match L` against a real Prometheus (Debian's package) on loopback, holding a real
vLLM 0.32 series (tools/live/capture_series.py: idle, 8 long requests preempted 14 times, idle) backfilled with
promtool so that its last scrape lies a few seconds before the query."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from conftest import FIXTURES, free_port, require_tool
from helpers import prometheus_server

SERIES = FIXTURES / "prometheus/preemption-series.jsonl.gz"
LOG = FIXTURES / "prometheus/preemption-series.log"
INSTANCE = "vllm-0:8000"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    binary = require_tool("prometheus", "apt-get install prometheus")
    promtool = require_tool("promtool", "apt-get install prometheus")
    folder = tmp_path_factory.mktemp("prometheus")
    recorded = prometheus_server.Recorded.read(SERIES)
    end = time.time() - prometheus_server.ENDS_BEFORE_NOW
    data = prometheus_server.backfill(promtool, prometheus_server.openmetrics(recorded, INSTANCE, end), folder)
    port = free_port()
    server = prometheus_server.start(binary, data, port, folder)
    yield f"http://127.0.0.1:{port}", recorded
    server.terminate()
    server.wait(timeout=30)


def advisor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args], capture_output=True, text=True, timeout=120, check=False
    )


def joined(*args: str) -> tuple[dict, int]:
    done = advisor(*args, "--format", "json")
    assert done.stdout, done.stderr
    report = json.loads(done.stdout)
    return (report[0] if isinstance(report, list) else report), done.returncode


def test_a_window_over_the_whole_run_counts_its_preemptions_and_their_spread(prometheus):
    url, _ = prometheus
    report, code = joined("--prometheus", url, "--since", "10m")
    (read,) = report["metrics"]["read"]
    assert read["source"] == f"{url} instance={INSTANCE}" and read["window_start"]
    assert read["values"]["preemptions"] == 14 and read["values"]["finished"] == 8
    assert report["verdict"]["failure"] == "preemption" and code == 1
    (found,) = [f for f in report["findings"] if f["rule"] == "M101"]
    # vLLM's per-request histogram: 4 requests preempted twice or more, the most 3 times; 8 x 137 prompt tokens.
    assert "4 of the 8 finished requests were preempted more than once (the most preempted 3 times)" in found["message"]
    assert "an estimated 1,918 to 43,918 tokens" in found["message"]
    # The series begins inside 10 minutes: counts, but no rate (a rate needs both ends of the window).
    assert "generation_tok_s" not in read["values"]


def test_a_window_over_the_quiet_end_counts_nothing_of_the_load_before_it(prometheus):
    url, _ = prometheus
    report, code = joined("--prometheus", url, "--since", "20s")
    (read,) = report["metrics"]["read"]
    values = read["values"]
    assert values["preemptions"] == 0 and values["preemptions_total"] == 14
    assert values["finished"] == 0 and values["rate_window_s"] == 20.0 and values["generation_tok_s"] == 0
    assert report["verdict"] == {**report["verdict"], "phase": "healthy", "failure": "none"} and code == 0


def test_a_window_over_the_load_gives_its_rate(prometheus):
    url, recorded = prometheus
    report, _ = joined("--prometheus", url, "--since", f"{int(recorded.length) - 5}s")
    values = report["metrics"]["read"][0]["values"]
    # 24,000 tokens generated, all after the window's start (the first 30 s were idle).
    assert values["preemptions"] == 14 and values["generation_tok_s"] == round(24000 / values["rate_window_s"], 1)


def test_the_log_and_prometheus_judge_together(prometheus):
    url, _ = prometheus
    report, code = joined(str(LOG), "--prometheus", url, "--since", "10m")
    assert report["verdict"]["failure"] == "preemption" and code == 1
    assert report["metrics"]["read"][0]["values"]["kv_cache_tokens"] == 5760


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--match", 'job="other"'], 'no vllm: series matching job="other" at '),
        (["--match", 'job=~"("'], "query refused: "),
        (["--since", "soon"], "--since 'soon': not a duration"),
    ],
)
def test_what_prometheus_refuses_is_one_line(prometheus, args, said):
    url, _ = prometheus
    done = advisor("--prometheus", url, *args)
    assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_an_unreachable_server_or_another_scheme_is_one_line():
    port = free_port()
    done = advisor("--prometheus", f"http://127.0.0.1:{port}")
    assert done.returncode == 2 and f"http://127.0.0.1:{port}: unreachable" in done.stderr
    done = advisor("--prometheus", "file:///etc/passwd")
    assert done.returncode == 2 and "takes a Prometheus server's http(s) URL" in done.stderr
    assert advisor("--match", 'job="vllm"').stderr.strip() == "vllm-advisor: --match needs --prometheus"
