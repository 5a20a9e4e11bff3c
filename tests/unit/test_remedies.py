"""Remedies never break their own rules, on every real log and every adversarial one."""

from __future__ import annotations

import re

import pytest
from conftest import FIXTURES, tiered

from advisor.defaults import MAX_UTILIZATION, block_size
from advisor.ingest import sources
from advisor.report.build import analyze, parse
from advisor.timeline.runs import split_runs

# Every log; not fixtures/wordings, a list of sample lines of unrelated servers rather than one log.
LOGS = sorted(path for path in FIXTURES.rglob("*.log") if path.parent.name != "wordings")
STARTUP_FREE_MEMORY = {"free_memory_below_utilization", "cpu_memory_below_utilization", "memory_summary", "kv_reserved"}
# A utilization a remedy proposes in its title, as "--gpu-memory-utilization 0.92" or "... to 0.92".
PROPOSED_UTILIZATION = re.compile(r"--gpu-memory-utilization(?: to| at|=| )\s*(\d+(?:\.\d+)?)")


def analysed(path):
    facts = parse(sources.lines(sources.read_chunks(str(path))))
    runs = split_runs(facts)
    return analyze(sources.lines(sources.read_chunks(str(path))), path.name), runs[-1].backend if runs else None


@pytest.mark.parametrize("path", tiered(LOGS), ids=lambda p: p.name[:40])
def test_remedies_keep_their_own_rules(path):
    report, backend = analysed(path)
    facts = report.facts
    # What was free when vLLM started (an OOM's "free" is what was left after vLLM took its share).
    at_startup = [e.values for e in report.events if e.kind in STARTUP_FREE_MEMORY]
    ceiling = min(
        [MAX_UTILIZATION]
        + [v["free_gpu_gib"] / v["total_gpu_gib"] for v in at_startup if v.get("total_gpu_gib") and "free_gpu_gib" in v]
    )
    block = facts.get("block_size") or block_size(backend)
    fit = facts.get("estimated_max_model_len") or facts.get("max_tokens_in_kv_cache") or facts.get("kv_cache_tokens")
    if fit and facts.get("max_concurrency", 0) >= 1 and facts.get("max_seq_len"):
        # A hybrid model's token figure counts its attention layers only; vLLM's concurrency at the
        # full length counts what one request really takes (324: 89,760 tokens, 1.36x at 262,144).
        fit = max(fit, int(facts["max_concurrency"] * facts["max_seq_len"]))
    if fit and report.verdict.phase == "healthy" and facts.get("max_seq_len"):
        # vLLM started at this length, so it fits, whatever the token figure says (V1 0.8 divided the
        # tokens by the length, blind to sliding windows: 28206, a Gemma 3 at 0.21x that served).
        fit = max(fit, int(facts["max_seq_len"]) + block)
    for finding in report.findings:
        for remedy in finding.remediations:
            texts = " ".join((remedy.title, remedy.why, remedy.tradeoff))
            proposed = [float(v) for v in PROPOSED_UTILIZATION.findall(remedy.title)]
            if remedy.flags.get("--gpu-memory-utilization"):
                proposed.append(float(remedy.flags["--gpu-memory-utilization"]))
            # Never above 0.95 nor above what was free, "keep the current value" included.
            assert all(value <= ceiling + 1e-9 for value in proposed), (finding.rule, remedy.title, ceiling)
            length = remedy.flags.get("--max-model-len")
            if fit and length and length.isdigit():
                # At least one KV block below what fits: vLLM keeps one as the null block.
                assert int(length) <= fit - block, (finding.rule, length, fit, block)
            if backend == "cpu":
                assert "nvidia-smi" not in texts and "GPUs" not in texts, (finding.rule, remedy.title)
        if backend == "cpu":
            assert "nvidia-smi" not in finding.message, finding.rule


def test_the_property_sees_cpu_logs_and_free_memory():
    # The checks above bind only where the log shows what they need: make sure some logs do.
    backends = [analysed(path)[1] for path in LOGS if path.parent.name == "live"]
    assert backends.count("cpu") >= 5
    report, _ = analysed(next(FIXTURES.glob("corpus/094-*.log")))  # 0.99 asked of a node with 0.84 free
    assert report.findings[0].remediations and report.facts["free_gpu_gib"] < report.facts["total_gpu_gib"]
