"""Advice in the words of the backend the log shows: the CPU backend's nodes and tools, an XPU's, never a GPU's."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from advisor.ingest import sources
from advisor.report.build import analyze
from advisor.report.formats import text

CPU_LOGS = [path for path in sorted(FIXTURES.rglob("*.log")) if "-cpu-" in path.name or "live" in path.parts]
GPU_WORDS = ("nvidia-smi", "GPUs", "total_gpu_gib", "free_gpu_gib", "a GPU ")


def analysed(path):
    return analyze(sources.lines(sources.read_chunks(str(path))), path.name)


@pytest.mark.parametrize("path", CPU_LOGS, ids=lambda p: p.name[:48])
def test_a_cpu_log_gets_no_gpu_words(path):
    report = analysed(path)
    if report.backend != "cpu":  # cut before vLLM names its platform: no device is guessed for it either
        assert report.backend is None
        return
    shown = text.render([report])
    assert not [word for word in GPU_WORDS if word in shown], shown


def test_the_tp_advice_on_one_numa_node_is_one():
    # TP 3 over 2 heads on a CPU build: 2 divides the heads, but this machine has one NUMA node.
    report = analysed(next(FIXTURES.glob("corpus/093-*.log")))
    assert report.backend == "cpu" and report.findings[0].remediations[0].flags == {"--tensor-parallel-size": "1"}


@pytest.mark.parametrize(
    "device, tool", [("xpu", "xpu-smi"), ("hpu", "hl-smi"), ("npu", "npu-smi"), ("tpu", "tpu-info")]
)
def test_another_backend_is_named_with_its_own_tool(tmp_path, device, tool):
    log = tmp_path / f"{device}.log"
    log.write_text(
        f"INFO 12-01 10:00:00 [__init__.py:1] Automatically detected platform {device}.\n"
        f"ERROR 12-01 10:00:05 [worker.py:1] ValueError: Free memory on device {device}:0 (7.0/16.0 GiB) "
        "on startup is less than desired GPU memory utilization (0.9, 14.4 GiB).\n"
    )
    report = analysed(log)
    shown = text.render([report])
    assert report.backend == device and f"({device.upper()} backend)" in shown
    assert tool in shown and "nvidia-smi" not in shown and "total_gpu_gib" not in shown
