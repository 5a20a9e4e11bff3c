"""Start a real vLLM server on a tiny local model through advisor.live.server."""

from __future__ import annotations

import pytest
from conftest import VLLM_PYTHON

from advisor.live import server as live_server

pytestmark = pytest.mark.live


def test_serves_a_completion_and_stops_cleanly(tiny_model, tmp_path):
    log = tmp_path / "vllm.log"
    port = live_server.free_port()
    server = live_server.start(
        VLLM_PYTHON,
        ["--model", str(tiny_model), "--max-model-len", "1024", "--kv-cache-memory-bytes", "16000000"],
        log,
        port,
    )
    try:
        ready = live_server.wait_ready(server, timeout=300)
        assert ready.state == "ready", f"{ready}; log tail:\n{log.read_text()[-3000:]}"

        done = live_server.complete(port, str(tiny_model), "Hello world", max_tokens=16, ignore_eos=True)
        assert done.status == 200, done.body
        assert done.tokens == 16
        assert done.first_token_s is not None and done.first_token_s <= done.seconds

        scraped = live_server.metrics(port)
        assert scraped["vllm:num_preemptions_total"] == 0
        assert scraped["vllm:generation_tokens_total"] >= 16
        assert live_server.peak_rss(server) > 50_000_000  # torch alone is larger than this
    finally:
        live_server.stop(server)

    assert server.process.returncode is not None
    assert live_server.group_pids(server.pgid) == []
    assert "Application startup complete." in log.read_text()
