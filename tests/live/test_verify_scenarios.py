"""`verify` on every live scenario: a real failing run (or its bundled capture), the advice, a real relaunch.

With VLLM_ADVISOR_RECORD=1 each scenario's measured row goes to fixtures/verify-scenarios.json as it passes, and
the verify page's table is regenerated from the rows (tools/verify_table.py)."""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
from dataclasses import dataclass, field

import pytest
from conftest import FIXTURES, ROOT, VLLM_PYTHON

from advisor import compare, pipeline
from advisor.ingest import sources
from advisor.live import launch
from advisor.live import server as live_server
from advisor.live import verify as live
from advisor.pipeline import served_model
from advisor.report.build import analyze

sys.path.insert(0, str(ROOT / "tools"))
import verify_table

pytestmark = pytest.mark.live
# The most memory a relaunch may reserve here: the CPU backend commits its whole KV cache at startup, and a
# fix sized to the free memory of a shared machine would take it from everyone else on it.
MEMORY_GIB = float(os.environ.get("VLLM_ADVISOR_LIVE_MEMORY_GIB", "4"))


@dataclass
class Scenario:
    """A failure to reproduce (flags to launch, or a bundled capture) and the verdicts it may get."""

    name: str
    accept: set[tuple[str, str]]
    flags: list[str] = field(default_factory=list)
    bundled: str | None = None
    load: int = 2
    max_tokens: int = 32
    hold_port: bool = False


BUDGET = ["--kv-cache-memory-bytes", "16000000"]  # a fixed KV budget: the outcome does not hang on free memory
# The captured failures and their relaunches run eager: compilation takes half of a CPU launch, and no
# scenario's failure or fix depends on it (the bundled captures keep the flags they were taken with).
EAGER = ["--enforce-eager"]
SCENARIOS = [
    Scenario(
        "HTTP port already in use",
        {("startup", "port_in_use")},
        flags=["--max-model-len", "4096", *BUDGET, *EAGER],
        hold_port=True,
    ),
    Scenario(
        "preemption under 10 concurrent requests",
        {("runtime", "preemption"), ("runtime", "kv_cache_saturated"), ("healthy", "none")},
        bundled="preemption.log",
        load=10,
        # Long enough that the ten overlap however fast the machine answers: with 1,000 tokens a fast idle run
        # finished its first requests before the last began, and nothing was preempted.
        max_tokens=2000,
    ),
    Scenario(
        "--tensor-parallel-size 3 with 2 attention heads",
        {("startup", "tp_heads_mismatch")},
        flags=["--tensor-parallel-size", "3", "--max-model-len", "4096", *BUDGET, *EAGER],
    ),
    # The fix (the model's 32768) needs 32 MiB of KV cache at 1 KiB per token: the budget holds it.
    Scenario(
        "--max-model-len 65536 above the model's 32768",
        {("startup", "max_len_exceeds_model")},
        flags=["--max-model-len", "65536", "--kv-cache-memory-bytes", "48000000", *EAGER],
    ),
    Scenario(
        "--gpu-memory-utilization 0.99 above the free memory",
        {("startup", "free_memory_below_utilization")},
        flags=["--max-model-len", "4096", "--gpu-memory-utilization", "0.99", *EAGER],
    ),
    Scenario(
        "--tensor-parallel-size 2 on one NUMA node",
        {("startup", "parallel_size_exceeds_devices")},
        flags=["--tensor-parallel-size", "2", "--max-model-len", "4096", *BUDGET, *EAGER],
    ),
    Scenario(
        "healthy under 4 concurrent requests", {("healthy", "none")}, bundled="healthy.log", load=4, max_tokens=256
    ),
    Scenario(
        "KV cache too small for --max-model-len 32768",
        {("startup", "kv_cache_insufficient")},
        bundled="kv-shortfall.log",
    ),
]


def analysed(path, model):
    """The report as `verify --model MODEL` makes it: the served model's folder sizes what the log does not."""
    return analyze(sources.lines(sources.read_chunks(str(path))), path.name, model=served_model(str(model)))


def two_free_ports() -> tuple[socket.socket, int]:
    """A listening socket on a port whose next port is free: the failure, and the advised fix's port."""
    for _ in range(50):
        held = socket.socket()
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        if live_server.port_is_free(port + 1):
            held.listen()
            return held, port
        held.close()
    raise AssertionError("no two consecutive free ports")


def capture(model, scenario, path):
    """Launch vLLM with the scenario's failing flags and keep its log."""
    held, port = two_free_ports() if scenario.hold_port else (None, live_server.free_port())
    server = live_server.start(VLLM_PYTHON, ["--model", str(model), *scenario.flags], path, port)
    try:
        live_server.wait_ready(server, 300)
    finally:
        live_server.stop(server)
        if held:
            held.close()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_verify_confirms_the_fix(scenario, tiny_model, tmp_path):
    path = FIXTURES / "live" / scenario.bundled if scenario.bundled else tmp_path / "failing.log"
    if not scenario.bundled:
        capture(tiny_model, scenario, path)
    report = analysed(path, tiny_model)
    assert (report.verdict.phase, report.verdict.failure) in scenario.accept, report.verdict
    argv = live.command_to_check(report, None)
    utilization, budget = (
        launch.flag_value(argv, "--gpu-memory-utilization"),
        launch.flag_value(argv, "--kv-cache-memory-bytes"),
    )
    reserved = float(budget) / 2**30 if budget else float(utilization or 0) * report.facts.get("total_gpu_gib", 0)
    if "free_gpu_gib" in report.facts:  # the machine's memory was short: the advice asks no more than was free
        assert reserved <= report.facts["free_gpu_gib"], argv
    if reserved > MEMORY_GIB:
        pytest.skip(f"the fix reserves {reserved:.1f} GiB (VLLM_ADVISOR_LIVE_MEMORY_GIB={MEMORY_GIB:g} allows less)")

    check = live.verify(
        report, argv, VLLM_PYTHON, tmp_path, 300, scenario.load, scenario.max_tokens, model=str(tiny_model)
    )
    print(live.render(check, "text"))
    after = check.after
    assert after.outcome == "fixed", live.render(check, "text")
    assert after.completion_status == 200 and after.preemptions == 0 and after.ttft_p50_s is not None
    # The round's logs side by side, as `compare` shows them: the one knob the advice changed, and the verdict.
    rows = compare.compare([pipeline.analysis(str(path)), pipeline.analysis(after.log)], [])
    assert rows[1].verdict == "healthy/none", compare.render(rows, "text")
    advised = {name.lstrip("-").replace("-", "_") for name in report.command.change}
    assert set(rows[1].changed) - {"model"} <= advised, rows[1]  # the model: the bundled log's folder, or this run's
    if scenario.hold_port:  # checked on the port the advice names, not on one verify picked
        assert (
            after.port
            == int(launch.flag_value(argv, "--port"))
            == int(launch.flag_value(shlex.split(report.command.original), "--port")) + 1
        )
    if scenario.bundled == "preemption.log":
        # The counter is the proof: what the 10-second stats lines of a short run catch of the pressure varies.
        assert check.before.preemptions > 0, "the original flags must preempt under this load"
        fit = int(launch.flag_value(shlex.split(after.command), "--max-num-seqs"))
        assert fit > 1, "sized by the load's request length, not full-length requests"
    if os.environ.get("VLLM_ADVISOR_RECORD") == "1":
        record(verify_table.row(scenario.name, report, check))


def record(row: dict) -> None:
    """The scenario's row into the recorded rows (in the scenarios' order) and the verify page's table, at once:
    an interrupted session keeps what it measured."""
    recorded = json.loads(verify_table.RESULTS.read_text()) if verify_table.RESULTS.exists() else []
    rows = {r["scenario"]: r for r in recorded}
    rows[row["scenario"]] = row
    ordered = [rows[s.name] for s in SCENARIOS if s.name in rows]
    verify_table.RESULTS.write_text(json.dumps(ordered, indent=2) + "\n")
    verify_table.write_page(ordered)
