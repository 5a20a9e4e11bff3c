"""Capture labelled vLLM logs from live runs of a tiny local model into fixtures/live."""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import socket
import string
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from advisor.live import server as live_server  # noqa: E402  (needs the repo on sys.path first)
from advisor.live.launch import default_vllm_python  # noqa: E402

DEFAULT_PYTHON = str(default_vllm_python())
MODEL_DIR = Path.home() / ".cache/vllm-advisor/models/tiny-llama"
MAX_POSITION_EMBEDDINGS = 32768
STATS_LINE = re.compile(r"Running: (\d+) reqs, Waiting: (\d+) reqs, \w+ KV cache usage: ([\d.]+)%")


def random_text(rng: random.Random, words: int) -> str:
    # Distinct text per request: identical prompts would be served from the prefix cache.
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 7))) for _ in range(words))


def request_record(done: live_server.Completion) -> dict:
    record = asdict(done)
    if done.status == 200:
        del record["body"]  # random weights generate noise; the error payloads are what matter
    return record


def serve_two_completions(server: live_server.Server, model: str) -> dict:
    prompts = ["Hello world.", "The KV cache holds keys and values."]
    results = [request_record(live_server.complete(server.port, model, p, 32)) for p in prompts]
    time.sleep(11)  # a healthy log shows at least one periodic stats line
    return {"requests": results}


def preempt(server: live_server.Server, model: str) -> dict:
    # 8 requests of ~100 + 3000 tokens against a 5,760-token cache cannot all stay resident.
    rng = random.Random(0)
    prompts = [random_text(rng, 30) for _ in range(8)]
    with ThreadPoolExecutor(len(prompts)) as pool:
        results = list(pool.map(lambda p: live_server.complete(server.port, model, p, 3000, ignore_eos=True), prompts))
    time.sleep(11)  # let one more 10 s stats line reach the log after the last request
    scraped = live_server.metrics(server.port)
    return {"requests": [request_record(r) for r in results], "preemptions": scraped.get("vllm:num_preemptions_total")}


def prompt_tokens(port: int, model: str, prompt: str) -> int:
    """The prompt's token count, from the server's own /tokenize endpoint."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/tokenize",
        data=json.dumps({"model": model, "prompt": prompt}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["count"]


CACHE_FULL_SEQS = 4
CACHE_FULL_TOKENS = 1300  # per request: 4 x 1,300 = 5,200 of the 5,760-token cache (90%)


def fill_cache(server: live_server.Server, model: str) -> dict:
    # 4 requests always in flight, each ~1,300 tokens (long distinct prompts, ignore_eos), that
    # together just fit: the cache stays high the whole time, so the 10 s stats lines see it
    # nearly full (waves of 4 left it draining between waves, and 0.20.2's lines missed the
    # peak); --max-num-seqs 4 means no fifth request competes for blocks, so nothing is preempted.
    began = time.monotonic()

    def worker(seed: int) -> tuple[list, int]:
        rng, done, longest = random.Random(seed), [], 0
        while time.monotonic() - began < 35 and len(done) < 40:  # bounded: ~3 stats lines
            prompt = random_text(rng, 200)
            count = prompt_tokens(server.port, model, prompt)
            longest = max(longest, count)
            done.append(live_server.complete(server.port, model, prompt, CACHE_FULL_TOKENS - count, ignore_eos=True))
        return done, longest

    with ThreadPoolExecutor(CACHE_FULL_SEQS) as pool:
        per_worker = list(pool.map(worker, range(2, 2 + CACHE_FULL_SEQS)))
    time.sleep(11)  # one more stats line after the last request
    return {
        "requests": [request_record(r) for done, _ in per_worker for r in done],
        "load": f"{CACHE_FULL_SEQS} requests always in flight for 35 s",
        "longest_prompt_tokens": max(longest for _, longest in per_worker),
        "tokens_in_flight": CACHE_FULL_SEQS * CACHE_FULL_TOKENS,
    }


def reject_long_prompt(server: live_server.Server, model: str) -> dict:
    # ~1,900 tokens in ~2,200 characters: over max_model_len in tokens, while staying
    # under the 8,192-character precheck that rejects with a different message.
    rng = random.Random(1)
    too_long = live_server.complete(server.port, model, random_text(rng, 400), 16)
    normal = live_server.complete(server.port, model, "Hello world.", 16)
    return {"requests": [request_record(too_long), request_record(normal)]}


@dataclass
class Scenario:
    name: str
    phase: str
    failure: str
    args: list[str]  # server flags besides --model
    expect: str  # text the log must contain for the capture to count
    drive: Callable[[live_server.Server, str], dict] | None = None  # None: must fail to start
    hold_port: bool = False
    # The operator stops it: SIGTERM to the server's main process only, as `kill PID` or
    # `docker stop` would, and the server must shut its engine down by itself.
    operator_sigterm: bool = False
    # For releases without --kv-cache-memory-bytes (and whose VLLM_CPU_KVCACHE_SPACE is whole
    # GiB): flags and env that still produce the failure; None means the generic adaptation.
    legacy_args: list[str] | None = None
    legacy_env: dict[str, str] | None = None
    env: dict[str, str] | None = None  # the server's environment beyond the machine's
    # Serve a copy of the model whose config.json names this architecture instead.
    architecture: str | None = None


SCENARIOS = [
    Scenario(
        "kv-shortfall",
        "startup",
        "kv_cache_insufficient",
        ["--max-model-len", "32768", "--kv-cache-memory-bytes", "4000000"],
        "is larger than the available KV cache memory",
        # 1 GiB (the least the env var can say) holds 1,048,576 tokens of 1,024 bytes, so ask
        # for twice that; the model says 32,768, hence the override of that check.
        legacy_args=["--max-model-len", str(2 * 1024 * 1024)],
        legacy_env={"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"},
    ),
    Scenario(
        "healthy",
        "healthy",
        "none",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "32000000"],
        "Application startup complete.",
        serve_two_completions,
    ),
    Scenario(
        "preemption",
        "runtime",
        "preemption",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "6000000", "--max-num-seqs", "8"],
        "KV cache usage",
        preempt,
    ),
    Scenario(
        "max-len-exceeds-model",
        "startup",
        "max_len_exceeds_model",
        ["--max-model-len", str(2 * MAX_POSITION_EMBEDDINGS)],
        "is greater than the derived max_model_len",
    ),
    Scenario(
        "tp-invalid",
        "startup",
        "tp_heads_mismatch",
        ["--max-model-len", "4096", "--tensor-parallel-size", "3"],
        "must be divisible by tensor parallel size",
    ),
    Scenario(
        "port-in-use",
        "startup",
        "port_in_use",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "32000000"],
        "Address already in use",
        hold_port=True,
    ),
    Scenario(
        "request-too-long",
        "runtime",
        "request_exceeds_max_model_len",
        ["--max-model-len", "1024", "--kv-cache-memory-bytes", "32000000"],
        '"POST /v1/completions HTTP/1.1" 400 Bad Request',
        reject_long_prompt,
    ),
    Scenario(
        "healthy-cache-full",
        "healthy",
        "none",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "6000000", "--max-num-seqs", str(CACHE_FULL_SEQS)],
        "KV cache usage",
        fill_cache,
    ),
    Scenario(
        "sigterm-shutdown",
        "healthy",
        "none",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "32000000"],
        "Application startup complete.",
        serve_two_completions,
        operator_sigterm=True,
    ),
    # Failures an operator meets with a model or flag the build does not support.
    # fp8 is a KV dtype the CPU backend has, but only on x86 with AVX-512 or AMX: on this machine's
    # cores (neither) it fails at startup; on one with them it starts.
    Scenario(
        "fp8-kv-without-avx512",
        "startup",
        "unsupported_kv_dtype",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "32000000", "--kv-cache-dtype", "fp8"],
        "FP8 KV cache on CPU requires x86 with AVX-512 or AMX.",
    ),
    Scenario(
        "unsupported-kv-dtype",
        "startup",
        "unsupported_kv_dtype",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "32000000", "--kv-cache-dtype", "fp8_inc"],
        "fp8_inc",
    ),
    Scenario(
        "unsupported-quantization",
        "startup",
        "unsupported_quantization",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "32000000", "--quantization", "gptq"],
        "gptq",
    ),
    Scenario(
        "unsupported-architecture",
        "startup",
        "unsupported_architecture",
        ["--max-model-len", "4096", "--kv-cache-memory-bytes", "32000000"],
        "NovelLlamaForCausalLM",
        architecture="NovelLlamaForCausalLM",
    ),
    # Healthy servers whose logs carry warnings that read like the failures above.
    Scenario(
        "healthy-long-context-override",
        "healthy",
        "none",
        ["--max-model-len", str(2 * MAX_POSITION_EMBEDDINGS), "--kv-cache-memory-bytes", "80000000"],
        "Application startup complete.",
        serve_two_completions,
        env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"},
    ),
]
CACHE_FULL_PCT = 75.0  # a stats line at least this full counts as "nearly full"


KV_BYTES_PER_TOKEN = 1024  # the tiny model: 2 layers x 2 KV heads x head_dim 64 x K and V x bf16
LEGACY_BLOCK = 128  # 0.32.0's CPU default; 0.15 warns below multiples of 32


def release_flags(python: str) -> dict:
    """What the release's CPU backend honours, read from its source (no import)."""
    pkg = subprocess.run(
        [python, "-c", "import importlib.util, os; print(os.path.dirname(importlib.util.find_spec('vllm').origin))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # 0.11 to 0.15 parse --kv-cache-memory-bytes but size the CPU cache from
    # VLLM_CPU_KVCACHE_SPACE alone: the platform code must read the flag too.
    cpu = (Path(pkg) / "platforms/cpu.py").read_text()
    return {"kv_cache_memory_bytes": "kv_cache_memory_bytes" in cpu}


def adapt(scenario: Scenario, flags: dict) -> tuple[list[str], dict[str, str], str | None]:
    """The scenario's flags and env for this release, and what was changed (None: nothing)."""
    if flags["kv_cache_memory_bytes"] or "--kv-cache-memory-bytes" not in scenario.args:
        return scenario.args, dict(scenario.env or {}), None
    if scenario.legacy_args is not None:
        return (
            scenario.legacy_args,
            dict(scenario.legacy_env or {}),
            (
                f"CPU backend ignores or lacks --kv-cache-memory-bytes: {' '.join(scenario.legacy_args)} with "
                + " ".join(f"{k}={v}" for k, v in (scenario.legacy_env or {}).items())
            ),
        )
    args = list(scenario.args)
    at = args.index("--kv-cache-memory-bytes")
    # The same token capacity 0.32.0 gives those bytes, in whole blocks of 128 tokens.
    tokens = int(args[at + 1]) // KV_BYTES_PER_TOKEN // 128 * 128
    args[at : at + 2] = ["--block-size", str(LEGACY_BLOCK), "--num-gpu-blocks-override", str(tokens // LEGACY_BLOCK)]
    env = {"VLLM_CPU_KVCACHE_SPACE": "1"}  # the override then picks the blocks out of 1 GiB
    return (
        args,
        env,
        (
            f"CPU backend ignores or lacks --kv-cache-memory-bytes: {' '.join(args[at : at + 4])} "
            f"({tokens} tokens) with VLLM_CPU_KVCACHE_SPACE=1"
        ),
    )


def confirmed(scenario: Scenario, ready: live_server.Readiness, log: str, outcome: dict) -> bool:
    if scenario.expect not in log:
        return False
    if scenario.drive is None:
        return ready.state == "exited" and ready.returncode != 0
    statuses = [r["status"] for r in outcome["requests"]]
    if scenario.name == "preemption":
        return bool(outcome["preemptions"]) and statuses == [200] * 8
    if scenario.name == "request-too-long":
        return statuses == [400, 200]
    if scenario.name == "healthy-cache-full":
        peak = max((float(u) for _r, _w, u in STATS_LINE.findall(log)), default=0.0)
        return outcome.get("preemptions") == 0 and peak >= CACHE_FULL_PCT and set(statuses) == {200}
    if scenario.operator_sigterm:
        return outcome.get("sigterm", {}).get("group_exited") is True and statuses == [200] * len(statuses)
    return statuses == [200] * len(statuses)


def scrape_metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def renamed_architecture(model: Path, architecture: str, copy: Path) -> Path:
    """A copy of the model folder whose config.json names another architecture (weights shared by link)."""
    copy.mkdir(parents=True, exist_ok=True)
    for item in model.iterdir():
        target = copy / item.name
        if item.name != "config.json" and not target.exists():
            target.symlink_to(item.resolve())
    config = json.loads((model / "config.json").read_text())
    config["architectures"] = [architecture]
    (copy / "config.json").write_text(json.dumps(config, indent=2))
    return copy


def metric_sum(text: str, name: str) -> float | None:
    """A Prometheus metric summed over its label sets; None when the dump lacks it."""
    pattern = re.compile(rf"^{re.escape(name)}(\{{.*\}})?\s+(\S+)", re.M)
    values = [float(m[2]) for m in pattern.finditer(text)]
    return sum(values) if values else None


def operator_stop(server: live_server.Server, grace: float = 60) -> dict:
    """SIGTERM the main process only and wait, bounded, for the whole group to go."""
    began = time.monotonic()
    os.kill(server.process.pid, signal.SIGTERM)
    while live_server.group_pids(server.pgid) and time.monotonic() - began < grace:
        server.process.poll()
        time.sleep(0.2)
    return {
        "group_exited": not live_server.group_pids(server.pgid),
        "returncode": server.process.poll(),
        "seconds": round(time.monotonic() - began, 1),
    }


def run(scenario: Scenario, python: str, model: Path, out: Path, version: str, flags: dict) -> dict:
    log_path = out / f"{scenario.name}.log"
    port = live_server.free_port()
    holder = None
    if scenario.hold_port:
        holder = socket.socket()
        holder.bind(("127.0.0.1", port))
        holder.listen()
    began = time.monotonic()
    args, env, adapted = adapt(scenario, flags)
    if scenario.architecture:
        model = renamed_architecture(model, scenario.architecture, out / f".{scenario.name}-model")
    server = live_server.start(python, ["--model", str(model), *args], log_path, port, env=env)
    outcome: dict = {}
    try:
        ready = live_server.wait_ready(server, timeout=300)
        if ready.state == "ready" and scenario.drive:
            outcome = scenario.drive(server, str(model))
        if ready.state == "ready":
            # Ground truth beside the log: what the server itself counted, right before it stops.
            dump = scrape_metrics(server.port)
            (out / f"{scenario.name}.metrics.txt").write_text(dump)
            outcome["preemptions"] = metric_sum(dump, "vllm:num_preemptions_total")
        if ready.state == "ready" and scenario.operator_sigterm:
            outcome["sigterm"] = operator_stop(server)
    finally:
        returncode = live_server.stop(server)
        if holder:
            holder.close()
    log = log_path.read_text(errors="replace")
    record = {
        "name": scenario.name,
        "vllm_version": version,
        "argv": server.argv,
        **({"env": env} if env else {}),
        **({"adapted": adapted} if adapted else {}),
        "model_dir": str(model),
        "label": {"phase": scenario.phase, "failure": scenario.failure},
        "expect_in_log": scenario.expect,
        "confirmed": confirmed(scenario, ready, log, outcome),
        "duration_s": round(time.monotonic() - began, 1),
        "startup": {"state": ready.state, "returncode": ready.returncode, "seconds": round(ready.seconds, 1)},
        "exit_code": returncode,
        "peak_rss_bytes": live_server.peak_rss(server),
        "stats_lines": [
            {"running": int(r), "waiting": int(w), "kv_usage_pct": float(u)} for r, w, u in STATS_LINE.findall(log)
        ],
        **outcome,
    }
    (out / f"{scenario.name}.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", help="comma-separated scenario names")
    parser.add_argument("--out", type=Path, default=REPO / "fixtures/live")
    parser.add_argument("--python", default=DEFAULT_PYTHON, help="python of the vLLM venv")
    args = parser.parse_args()

    chosen = SCENARIOS
    if args.only:
        names = args.only.split(",")
        unknown = set(names) - {s.name for s in SCENARIOS}
        if unknown:
            parser.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")
        chosen = [s for s in SCENARIOS if s.name in names]

    args.out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            args.python,
            str(REPO / "tools/live/build_tiny_model.py"),
            "--out",
            str(MODEL_DIR),
            "--max-position-embeddings",
            str(MAX_POSITION_EMBEDDINGS),
        ],
        check=True,
    )
    version = subprocess.run(
        [args.python, "-c", "import importlib.metadata as m; print(m.version('vllm-cpu'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()

    flags = release_flags(args.python)
    failed = []
    for scenario in chosen:  # one at a time: two cores cannot run two servers well
        record = run(scenario, args.python, MODEL_DIR, args.out, version, flags)
        print(
            f"{scenario.name:24} {record['duration_s']:6.1f} s  "
            f"{'confirmed' if record['confirmed'] else 'NOT CONFIRMED'}",
            flush=True,
        )
        if not record["confirmed"]:
            failed.append(scenario.name)
    if failed:
        print(f"not confirmed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
