"""Real GPU logs against plan: the printed KV cache memory, rounded to the digits vLLM printed, must give a token
interval that holds the printed KV cache size (docs/plan.md, "Real GPU logs").

    python tools/gpu_log_table.py            # prints the Markdown table from fixtures/plan/gpu-logs.json

Each log's printed figures are the advisor's own reading of the log; fixtures/plan/gpu-logs.json names only the
model's config and the flags the log does not print. A test keeps the page's copy equal to this output.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from advisor import pipeline  # noqa: E402  (needs the repo on sys.path first)
from advisor.plan import model, planner  # noqa: E402
from advisor.plan.request import Request  # noqa: E402

FIXTURES = ROOT / "fixtures"
INDEX = FIXTURES / "plan/gpu-logs.json"
CONFIGS = FIXTURES / "plan/configs"
GIB = 1024**3


@dataclass(frozen=True)
class Case:
    log: str
    config: str
    model: str
    gib: str  # as printed
    tokens: int
    max_model_len: int
    tensor_parallel: int
    kv_cache_dtype: str
    version: str | None
    one_line: bool  # vLLM >= 0.30 prints tokens and concurrency on one line, int(concurrency x length)
    sliding_as_full: str  # why this log's vLLM kept sliding-window layers at full length, or ""

    def bounds(self) -> tuple[int, int]:
        """The bytes the printed GiB can stand for: its value plus or minus half its last digit."""
        value = Decimal(self.gib)
        half = Decimal(5) * Decimal(10) ** (value.as_tuple().exponent - 1)  # type: ignore[operator]
        return math.ceil((value - half) * GIB), math.floor((value + half) * GIB)


def read(entry: dict) -> Case:
    """One entry of the index with the figures its log printed, as the advisor reads them."""
    report = pipeline.analysis_of_file(str(FIXTURES / entry["log"]), None).report()
    facts = report.facts
    if "kv_available_gib" not in facts or "kv_cache_tokens" not in facts:
        raise ValueError(f"{entry['log']}: no 'Available KV cache memory' or no 'KV cache size' line")
    lines = {kind: {e.line for e in report.events if e.kind == kind} for kind in ("kv_cache_size", "concurrency")}
    return Case(
        entry["log"],
        entry["config"],
        entry["model"],
        f"{facts['kv_available_gib']:.2f}",  # V1 prints it with %.2f
        int(facts["kv_cache_tokens"]),
        int(facts.get("max_seq_len", entry.get("max_model_len", 0))),
        int(facts.get("tensor_parallel_size", entry["tensor_parallel"])),
        entry["kv_cache_dtype"],
        report.vllm_version,
        bool(lines["kv_cache_size"] & lines["concurrency"]),
        entry.get("sliding_as_full", ""),
    )


def cases() -> list[Case]:
    return [read(entry) for entry in json.loads(INDEX.read_text())["logs"]]


def interval(case: Case) -> tuple[int, int]:
    """plan's KV cache tokens at the low and the high end of the printed GiB, as the log's vLLM printed them.

    Before the one-line format, vLLM printed num_blocks // groups x block size (kv_cache_utils.py), which differs
    from 0.32's int(concurrency x length) only when the length is not a whole number of blocks.
    """
    shape = model.load(CONFIGS / case.config)
    if case.sliding_as_full:
        kinds = ["full" if kind == "sliding" else kind for kind in shape.layer_kinds]
        shape = dataclasses.replace(shape, layer_kinds=kinds, sliding_window=None)
    tokens = []
    for budget in case.bounds():
        request = Request(
            str(CONFIGS / case.config),
            tensor_parallel=case.tensor_parallel,
            max_model_len=case.max_model_len,
            kv_cache_dtype=case.kv_cache_dtype,
            kv_cache_memory_bytes=budget,
            device="cuda",
        )
        plan = planner.plan(request, shape, with_what_if=False)
        if case.one_line or len(set(shape.layer_kinds)) > 1:
            tokens.append(plan.figure("KV cache tokens").value)
        else:
            tokens.append(plan.figure("KV cache blocks").value * plan.settings.block_size)
    return tokens[0], tokens[1]


def rows() -> list[str]:
    lines = [
        "| log | vLLM | model (config) | length, TP, KV dtype | printed | plan for that GiB | inside |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for case in cases():
        low, high = interval(case)
        inside = "yes" if low <= case.tokens <= high else "**no**"
        if case.sliding_as_full:
            inside += " (sliding layers at full length, as before 0.10.0)"
        elif not case.one_line and case.max_model_len % 16:
            inside += " (blocks x 16, as before 0.30)"
        lines.append(
            f"| {case.log.split('/')[0]} {case.log.split('/')[1].split('-')[0]} | {case.version or '?'} "
            f"| {case.model} (`{case.config}`) | {case.max_model_len:,}, {case.tensor_parallel}, {case.kv_cache_dtype} "
            f"| {case.gib} GiB, {case.tokens:,} tokens | {low:,} .. {high:,} | {inside} |"
        )
    return lines


if __name__ == "__main__":
    print("\n".join(rows()))
