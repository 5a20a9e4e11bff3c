"""Capture what vLLM prints about its KV cache for each tiny architecture, into fixtures/plan.

Each case is one vLLM start with a fixed --kv-cache-memory-bytes (no block size given): it
either prints "KV cache size: N tokens, Maximum concurrency ..." or fails with vLLM's estimate
of the longest length that fits. The model's config.json and the captured log are kept; the
fast tier checks `vllm-advisor plan` against them and the live tier does it again for real.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from advisor.live import server as live_server  # noqa: E402  (needs the repo on sys.path first)
from advisor.live.launch import default_vllm_python  # noqa: E402
from advisor.plan.request import CPU_FLAGS_READ  # noqa: E402

DEFAULT_PYTHON = str(default_vllm_python())
MODELS = Path.home() / ".cache/vllm-advisor/models/plan"
FIXTURES = REPO / "fixtures/plan"
# What ends a start: the capacity line, vLLM's error, or the server giving up.
DONE_MARKERS = ("KV cache size:", "estimated maximum model length", "Engine core initialization failed")

# (architecture, case, max-model-len, kv-cache-memory-bytes)
CASES = [
    ("llama-mha", "fits", 8192, 40_000_000),
    ("llama-gqa", "fits", 8192, 40_000_000),
    ("llama-mqa", "fits", 8192, 40_000_000),
    ("mistral-sliding", "fits", 8192, 40_000_000),
    ("gemma2-interleaved", "fits", 8192, 40_000_000),
    ("deepseek-v2-mla", "fits", 8192, 40_000_000),
    ("jamba-hybrid", "fits", 8192, 40_000_000),
    ("llama-gqa", "too-long", 32768, 3_000_000),
    ("gemma2-interleaved", "too-long", 32768, 3_000_000),
    ("deepseek-v2-mla", "too-long", 32768, 1_000_000),
    ("jamba-hybrid", "too-long", 32768, 3_000_000),
    ("mamba1-pure", "fits", 8192, 40_000_000),
    ("mamba2-pure", "fits", 8192, 40_000_000),
    ("granite4-hybrid", "fits", 8192, 40_000_000),
    ("nemotron-h-hybrid", "fits", 8192, 40_000_000),
    ("falcon-h1-parallel", "fits", 8192, 40_000_000),
    ("qwen3-next-gdn", "fits", 8192, 40_000_000),
    ("gpt-oss-sinks", "fits", 8192, 40_000_000),
    ("gemma3-local-global", "fits", 8192, 40_000_000),
    ("llama4-chunked", "fits", 8192, 40_000_000),
    ("granite4-big-state", "fits", 8192, 40_000_000),
    ("granite4-hybrid", "too-long", 32768, 3_000_000),
    ("qwen3-next-gdn", "too-long", 32768, 3_000_000),
]


def capture(python: str, model: Path, max_model_len: int, kv_bytes: int, log_path: Path, timeout: float = 400) -> str:
    """Start vLLM once (start() waits for the launch lock), stop it when the KV cache is sized; the log text."""
    # Eager: on CPU, compilation runs before the KV cache is sized and does not change it (half the launch's time).
    args = [
        "--model",
        str(model),
        "--max-model-len",
        str(max_model_len),
        "--kv-cache-memory-bytes",
        str(kv_bytes),
        "--enforce-eager",
    ]
    server = live_server.start(python, args, log_path, live_server.free_port())  # takes the launch lock
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and server.process.poll() is None:
            if any(marker in log_path.read_text(encoding="utf-8", errors="replace") for marker in DONE_MARKERS):
                break
            time.sleep(1)
        time.sleep(2)  # the rest of the error's traceback
    finally:
        live_server.stop(server)
    return log_path.read_text(encoding="utf-8", errors="replace")


def host_cpu_flags() -> list[str]:
    """The flags plan reads, of this machine's CPU: the capture runs vLLM here, so this host is the server."""
    with open("/proc/cpuinfo", encoding="utf-8") as handle:
        flags = next((set(line.split(":", 1)[1].split()) for line in handle if line.startswith("flags")), set())
    return [flag for flag in CPU_FLAGS_READ if flag in flags]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--python", default=DEFAULT_PYTHON, help="the vLLM environment's python")
    parser.add_argument("--models", type=Path, default=MODELS, help="where build_plan_models.py built them")
    parser.add_argument("--only", nargs="*", help="architectures to capture (default: all)")
    parser.add_argument("--case", choices=sorted({case for _, case, _, _ in CASES}), help="default: every case")
    args = parser.parse_args()
    version = subprocess.run(
        [args.python, "-c", "import vllm; print(vllm.__version__)"], capture_output=True, text=True, check=True
    ).stdout.strip()
    index_path = FIXTURES / "cases.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {"cases": []}
    for arch, case, length, kv_bytes in CASES:
        if (args.only and arch not in args.only) or (args.case and case != args.case):
            continue
        folder = FIXTURES / arch
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(args.models / arch / "config.json", folder / "config.json")
        began = time.monotonic()
        log = capture(args.python, args.models / arch, length, kv_bytes, folder / f"{case}.log")
        print(
            f"{arch} {case}: {time.monotonic() - began:.0f} s, "
            f"{'sized' if 'KV cache size:' in log else 'error' if 'estimated maximum' in log else 'NO RESULT'}"
        )
        entry = {
            "architecture": arch,
            "case": case,
            "log": f"{arch}/{case}.log",
            "max_model_len": length,
            "kv_cache_memory_bytes": kv_bytes,
            "vllm": version,
            "cpu_flags": host_cpu_flags(),
        }
        index["cases"] = [c for c in index["cases"] if (c["architecture"], c["case"]) != (arch, case)] + [entry]
        index_path.write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    main()
