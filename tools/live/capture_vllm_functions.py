"""Keep vLLM's own KV figures for a CUDA launch of every model in fixtures/plan, from its functions, not a start.

For each real config (fixtures/plan/configs, TP 1, 2, 4 and 8) and each tiny family model (fixtures/plan/<family>,
TP 1, the captured lengths and budgets), plan's reading of the layer pattern is handed to
vllm_kv_functions.py, which runs in the vLLM venv and calls vLLM 0.32's ModelConfig, state-shape, block-alignment,
grouping and capacity functions with CUDA's block sizes. The results go to fixtures/plan/vllm-functions.json;
the fast tier checks `plan --device cuda` against them (tests/integration/test_plan_vllm_functions.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from advisor.live.launch import default_vllm_python  # noqa: E402  (needs the repo on sys.path first)
from advisor.plan import model, planner  # noqa: E402
from advisor.plan.figures import PlanError  # noqa: E402
from advisor.plan.request import Request  # noqa: E402

FIXTURES = REPO / "fixtures/plan"
OUT = FIXTURES / "vllm-functions.json"
GIB = 1024**3
BATCHED = 2048  # --max-num-batched-tokens, given so that both sides size the tokens in flight alike


def cases() -> list[dict]:
    index = json.loads((FIXTURES / "cases.json").read_text())["cases"]
    found = [
        (folder, tp, 32768, 20 * GIB) for folder in sorted((FIXTURES / "configs").iterdir()) for tp in (1, 2, 4, 8)
    ]
    found += [
        (FIXTURES / case["architecture"], 1, case["max_model_len"], case["kv_cache_memory_bytes"])
        for case in sorted(index, key=lambda c: (c["architecture"], c["case"]))
    ]
    requests = []
    for folder, tp, length, kv_bytes in found:
        shape = model.load(folder)
        length = min(length, shape.max_model_len)  # vLLM refuses a length above the model's own (gemma-2: 8192)
        request = Request(
            str(folder), tensor_parallel=tp, max_model_len=length, kv_cache_memory_bytes=kv_bytes,
            max_num_batched_tokens=BATCHED,
        )  # fmt: skip
        try:
            planner.plan(request, shape, with_what_if=False)
        except PlanError:
            continue  # a TP that does not divide the heads: vLLM refuses it too
        requests.append(
            {
                "model_dir": str(folder.relative_to(REPO)),
                "layer_kinds": shape.layer_kinds,
                "tensor_parallel": tp,
                "max_model_len": length,
                "kv_cache_memory_bytes": kv_bytes,
                "max_num_batched_tokens": BATCHED,
            }
        )
    return requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--python", default=str(default_vllm_python()), help="the vLLM environment's python")
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".json", delete=False) as handle:
        json.dump(cases(), handle)
    done = subprocess.run(
        [args.python, str(Path(__file__).with_name("vllm_kv_functions.py")), handle.name],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    version = subprocess.run(
        [args.python, "-c", "import vllm; print(vllm.__version__)"], capture_output=True, text=True, check=True
    ).stdout.strip()
    results = json.loads(done.stdout)
    OUT.write_text(json.dumps({"vllm": version, "device": "cuda", "results": results}, indent=1) + "\n")
    print(f"{len(results)} cases from vLLM {version}'s functions -> {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
