"""The loop closed on a real vLLM: a failing run, the advisor's corrected command, and the fixed run."""
from __future__ import annotations

import shlex
import time

import pytest
from conftest import VLLM_PYTHON

from advisor.ingest import sources
from advisor.live import server as live_server
from advisor.live import verify as live
from advisor.report.build import analyze

pytestmark = pytest.mark.live


def run_failing(model, args, tmp_path, load=0, max_tokens=16):
    """Start vLLM with failing flags, drive it if it starts, return the analysed log and metrics."""
    log = tmp_path / "failing.log"
    server = live_server.start(VLLM_PYTHON, ["--model", str(model), *args], log, live_server.free_port())
    preemptions = None
    try:
        if live_server.wait_ready(server, 300).state == "ready" and load:
            live.send_load(server.port, str(model), load, max_tokens)
            preemptions = live_server.metrics(server.port).get(live.PREEMPTIONS)
    finally:
        live_server.stop(server)
    return analyze(sources.lines(sources.read_chunks(str(log))), log.name), preemptions


def test_kv_shortfall_is_fixed_by_the_corrected_command(tiny_model, tmp_path):
    began = time.monotonic()
    report, _ = run_failing(tiny_model, ["--max-model-len", "32768", "--kv-cache-memory-bytes", "4000000"], tmp_path)
    assert (report.verdict.phase, report.verdict.failure) == ("startup", "kv_cache_insufficient")
    corrected = shlex.split(report.command.corrected)
    assert corrected[:3] == ["vllm", "serve", str(tiny_model)] and "--max-model-len" in corrected

    result = live.launch(corrected, VLLM_PYTHON, tmp_path, timeout=300)
    print(f"kv-shortfall loop: {time.monotonic() - began:.0f} s; {result}")
    assert result.outcome == "fixed", result
    assert result.completion_status == 200 and result.kv_cache_tokens


def test_preemption_is_removed_by_the_runtime_advice(tiny_model, tmp_path):
    began = time.monotonic()
    args = ["--max-model-len", "4096", "--kv-cache-memory-bytes", "6000000", "--max-num-seqs", "8"]
    # Long generations for more requests than fit: the pressure lasts across a 10-second stats line.
    report, preemptions = run_failing(tiny_model, args, tmp_path, load=10, max_tokens=3000)
    assert preemptions and preemptions > 0, "the failing run must preempt (vllm:num_preemptions_total)"
    stats = [e.values for e in report.events if e.kind == "stats"]
    # What the 10-second stats lines catch of the pressure varies from run to run: requests falling back
    # to waiting over two lines (R103), the cache pinned full on two lines in a row (R104), or one
    # snapshot, which is information (H103). All three give preemption's advice; the counter is the proof.
    codes = [f.rule for f in report.findings]
    assert {"R103", "R104", "H103"} & set(codes), (codes, stats)
    assert (report.verdict.phase, report.verdict.failure) in (
        ("runtime", "preemption"), ("runtime", "kv_cache_saturated"), ("healthy", "none"))

    corrected = shlex.split(report.command.corrected)
    result = live.launch(corrected, VLLM_PYTHON, tmp_path, timeout=300, load=10, max_tokens=3000)
    print(f"preemption loop: {time.monotonic() - began:.0f} s; before {preemptions} preemptions; {result}")
    assert result.preemptions == 0 and result.outcome == "fixed", result
