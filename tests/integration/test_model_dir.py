"""`--model-dir`: the served model's folder sizes the fix the log alone cannot, checked against `plan`."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

from conftest import FIXTURES, ROOT

LOG = FIXTURES / "corpus/094-live-v0320-cpu-memory-utilization-099.log"  # 0.99 asked, 7.03 of 8.34 GiB free
MODELS = FIXTURES / "plan"


def advisor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def plan_figures(model: str, kv_bytes: int) -> dict:
    done = advisor(
        "plan",
        model,
        "--device",
        "cpu",
        "--max-model-len",
        "4096",
        "--kv-cache-memory-bytes",
        str(kv_bytes),
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    return {name: figure["value"] for name, figure in json.loads(done.stdout)["figures"].items()}


def test_the_fix_is_a_kv_budget_the_model_fills_not_all_that_was_free():
    for arch in ("llama-mha", "llama-gqa", "mistral-sliding"):
        model = str(MODELS / arch)
        done = advisor("--format", "json", "--model-dir", model, str(LOG))
        report = json.loads(done.stdout)
        top = report["findings"][0]["remediations"][0]
        assert (report["verdict"]["rule"], done.returncode) == ("S103", 1)
        budget = int(top["flags"]["--kv-cache-memory-bytes"])
        assert top["flags"]["--gpu-memory-utilization"] is None
        corrected = shlex.split(report["command"]["corrected"])
        assert "--gpu-memory-utilization" not in corrected and corrected[
            corrected.index("--kv-cache-memory-bytes") + 1
        ] == str(budget)
        # plan, given that budget, agrees: a request of the log's 4096 tokens fits, and as many at once as
        # the remedy says (vLLM's CPU default of 128 sequences; 7 GiB free holds far more than these need).
        figures = plan_figures(model, budget)
        assert figures["longest max-model-len for one sequence"] >= 4096
        assert 128 <= figures["maximum concurrency"] < 129, figures
        assert budget < 0.9 * 7.03 * 2**30
        assert "128 such requests" in top["why"] and model in top["why"]


def test_a_log_that_does_not_say_what_was_free_is_analysed_with_the_folder_too():
    # Every rule that fires derives its arithmetic with the model's figures: a log without free memory
    # (here a KV shortfall) must still get its report, and its own first fix.
    with_model = advisor(
        "--format", "json", "--model-dir", str(MODELS / "llama-mha"), str(FIXTURES / "live/kv-shortfall.log")
    )
    alone = advisor("--format", "json", str(FIXTURES / "live/kv-shortfall.log"))
    assert with_model.returncode == alone.returncode == 1 and with_model.stderr == ""
    report, plain = json.loads(with_model.stdout), json.loads(alone.stdout)
    assert report["verdict"] == plain["verdict"] and report["command"] == plain["command"]


def test_without_the_folder_the_advice_is_the_log_s_own():
    report = json.loads(advisor("--format", "json", str(LOG)).stdout)
    assert report["findings"][0]["remediations"][0]["flags"] == {"--gpu-memory-utilization": "0.84"}


def test_a_folder_that_is_not_a_model_is_a_one_line_error(tmp_path):
    done = advisor("--model-dir", str(tmp_path), str(LOG))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"vllm-advisor: {tmp_path}: no config.json in the folder\n"


def test_metrics_leave_the_log_s_findings_made_with_the_folder_unchanged():
    # --metrics settles what the log inferred on the matches the analysis made (with the model): it does
    # not match again without it, so the top fix stays the model's KV budget, not "lower the utilization".
    model = str(MODELS / "llama-mha")
    dump = str(FIXTURES / "live/healthy-cache-full.metrics.txt")
    alone = json.loads(advisor("--format", "json", "--model-dir", model, str(LOG)).stdout)
    done = advisor("--format", "json", "--model-dir", model, "--metrics", dump, str(LOG))
    assert done.stderr == ""
    joined = json.loads(done.stdout)
    assert joined["metrics"]["read"]
    log_findings = [f for f in joined["findings"] if not f["rule"].startswith("M")]
    assert log_findings == alone["findings"]
    assert "--kv-cache-memory-bytes" in log_findings[0]["remediations"][0]["flags"]
    assert (joined["verdict"], joined["command"]) == (alone["verdict"], alone["command"])
