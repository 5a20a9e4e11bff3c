"""The plan page's table (docs/plan.md): each tiny architecture, what `plan` predicts, and what vLLM printed
in the captured log.

    python tools/plan_table.py            # prints the Markdown table from fixtures/plan

A test keeps the page's copy equal to this output, so a change in plan or in the fixtures shows up.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from advisor.plan import model, planner  # noqa: E402  (needs the repo on sys.path first)
from advisor.plan.request import Request  # noqa: E402

FIXTURES = ROOT / "fixtures/plan"
PRINTED = re.compile(
    r"KV cache size: ([\d,]+) tokens, Maximum concurrency for ([\d,]+) tokens per request: "
    r"([\d.]+)x"
)
ESTIMATE = re.compile(r"the estimated maximum model length is (\d+)\.")


def vllm_printed(log: str) -> dict:
    """What vLLM said about its KV cache: tokens and concurrency, or its estimate of the longest length."""
    if match := PRINTED.search(log):
        return {
            "tokens": int(match[1].replace(",", "")),
            "length": int(match[2].replace(",", "")),
            "concurrency": match[3],
        }
    if match := ESTIMATE.search(log):
        return {"estimate": int(match[1])}
    raise ValueError("the log has neither vLLM's KV cache size line nor its estimate")


def predicted(model_dir: Path, case: dict) -> planner.Plan:
    request = Request(
        str(model_dir),
        max_model_len=case["max_model_len"],
        kv_cache_memory_bytes=case["kv_cache_memory_bytes"],
        device="cpu",
        cpu_flags=frozenset(case["cpu_flags"]),
    )
    return planner.plan(request, model.load(model_dir), with_what_if=False)


def cases() -> list[dict]:
    """The captured cases, those that fit first, each kind by architecture."""
    return sorted(
        json.loads((FIXTURES / "cases.json").read_text())["cases"], key=lambda c: (c["case"], c["architecture"])
    )


def rows() -> list[str]:
    lines = [
        "| architecture | case | --max-model-len | --kv-cache-memory-bytes | plan predicts | vLLM printed |",
        "| --- | --- | ---: | ---: | --- | --- |",
    ]
    for case in cases():
        result = predicted(FIXTURES / case["architecture"], case)
        printed = vllm_printed((FIXTURES / case["log"]).read_text())
        if "estimate" in printed:
            ours = f"longest {result.figure('longest max-model-len for one sequence').value}"
            theirs = f"estimated maximum model length {printed['estimate']}"
        else:
            ours = (
                f"{result.figure('KV cache tokens').value:,} tokens, {result.figure('maximum concurrency').value:.2f}x"
            )
            theirs = f"{printed['tokens']:,} tokens, {printed['concurrency']}x"
        lines.append(
            f"| {case['architecture']} | {case['case']} | {case['max_model_len']:,} | "
            f"{case['kv_cache_memory_bytes']:,} | {ours} | {theirs} |"
        )
    return lines


if __name__ == "__main__":
    print("\n".join(rows()))
