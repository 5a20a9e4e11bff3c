"""Log plus /metrics on a real vLLM: a preempting server's inference confirmed by the counter, a busy
healthy one judged healthy from log plus metrics and from metrics alone."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import ROOT, VLLM_PYTHON

from advisor.live import launch
from advisor.live import server as live_server

sys.path.insert(0, str(ROOT / "tools" / "live"))
import capture_scenarios

pytestmark = pytest.mark.live


def advisor_json(*args: str) -> tuple[dict, int]:
    done = subprocess.run(
        [sys.executable, "-m", "advisor", "--format", "json", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.stderr == "", done.stderr
    return json.loads(done.stdout), done.returncode


def started(model, args, log):
    server = live_server.start(VLLM_PYTHON, ["--model", str(model), *args], log, live_server.free_port())
    ready = live_server.wait_ready(server, 400)
    if ready.state != "ready":
        live_server.stop(server)
        pytest.fail(f"vLLM did not start: {ready}; log tail:\n{log.read_text()[-2000:]}")
    return server


def test_preemption_inferred_from_the_log_is_confirmed_by_the_counter(tiny_model, tmp_path):
    log = tmp_path / "preempting.log"
    # As the closed loop's failing run: long generations for more requests than the 5,760-token cache holds.
    server = started(
        tiny_model, ["--max-model-len", "4096", "--kv-cache-memory-bytes", "6000000", "--max-num-seqs", "8"], log
    )
    try:
        launch.send_load(server.port, str(tiny_model), 10, 3000)
        time.sleep(11)  # one more stats line after the last request
        url = f"http://127.0.0.1:{server.port}/metrics"
        report, code = advisor_json("--metrics", url, str(log))
        counter = live_server.metrics(server.port)["vllm:num_preemptions_total"]
    finally:
        live_server.stop(server)
    print(json.dumps(report["metrics"], indent=1))
    assert counter > 0
    assert code == 1 and report["verdict"]["failure"] == "preemption"
    confirmed = [f for f in report["findings"] if f["evidence"] == "metrics" and f["failure"] == "preemption"]
    assert confirmed, [(f["rule"], f["evidence"]) for f in report["findings"]]
    assert report["metrics"]["read"][0]["values"]["preemptions"] == counter
    assert (
        f"vllm:num_preemptions_total counts {counter:g} preemptions"
        in next(f for f in confirmed if f["rule"] == "M101")["message"]
    )
    # Whatever the stats lines caught of the pressure (R103, R104 or the H103 snapshot) is confirmed, not withdrawn.
    assert all(s["outcome"] == "confirmed" for s in report["metrics"]["log_findings"]), report["metrics"]


def cache_usage_peak(port: int, seconds: float) -> float:
    """The highest KV cache usage (vllm:kv_cache_usage_perc, 0 to 1) that /metrics showed over some seconds."""
    peak, until = 0.0, time.monotonic() + seconds
    while time.monotonic() < until:
        peak = max(peak, live_server.metrics(port).get("vllm:kv_cache_usage_perc", 0.0))
        time.sleep(0.5)
    return peak


def test_cache_full_for_a_moment_without_preemption_is_healthy(tiny_model, tmp_path):
    log = tmp_path / "cache-full.log"
    # tools/live/capture_scenarios.py's healthy-cache-full: 4 requests of ~1,300 tokens always in flight fill
    # about 90% of the 5,760-token cache; --max-num-seqs 4 lets no fifth compete, so nothing is preempted.
    server = started(
        tiny_model, ["--max-model-len", "4096", "--kv-cache-memory-bytes", "6000000", "--max-num-seqs", "4"], log
    )
    url = f"http://127.0.0.1:{server.port}/metrics"
    try:
        with ThreadPoolExecutor(1) as pool:
            load = pool.submit(capture_scenarios.fill_cache, server, str(tiny_model))  # 35 s, then one stats line
            peak = cache_usage_peak(server.port, seconds=20)
            during = advisor_json("--metrics", url)  # judged alone while the cache is full
            load.result()
        joined, joined_code = advisor_json("--metrics", url, str(log))
        alone, alone_code = advisor_json("--metrics", url)
        counter = live_server.metrics(server.port)["vllm:num_preemptions_total"]
    finally:
        live_server.stop(server)
    stats = [e["values"] for e in joined["events"] if e["kind"] == "stats"]
    print("peak:", peak, "\nstats lines:", stats, "\nduring:", during[0]["metrics"]["read"][0]["values"])
    assert counter == 0
    # The cache was busy: the load peaks near 90% (the bundled capture: 88.6%). The 10-second stats lines only
    # sample it (43.2% at best on one run), so the gauge polled twice a second says how full it got.
    assert peak >= 0.6, (peak, stats)
    for report, code in (during, (joined, joined_code), (alone, alone_code)):
        verdict = report["verdict"]
        assert code == 0 and (verdict["phase"], verdict["failure"]) == ("healthy", "none"), verdict
        assert not [f for f in report["findings"] if f["severity"] != "info"], report["findings"]
    # A snapshot of pressure the log showed, if any, is withdrawn by the counter, never left standing.
    assert all(s["outcome"] == "withdrawn" for s in joined["metrics"]["log_findings"])
