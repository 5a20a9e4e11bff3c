"""What the human-readable formats (text, markdown, sarif) say alike, without their libraries."""

from __future__ import annotations

from advisor.report.contract import Finding, Report

# The public fact names, in the order an operator reads them.
KEY_FACTS = (
    "max_seq_len",
    "kv_needed_gib",
    "kv_available_gib",
    "estimated_max_model_len",
    "max_tokens_in_kv_cache",
    "kv_cache_tokens",
    "max_concurrency",
    "gpu_blocks",
    "cpu_blocks",
    "gpu_memory_utilization",
    "total_gpu_gib",
    "free_gpu_gib",
    "requested_gib",
    "weights_gib",
    "tensor_parallel_size",
    "num_attention_heads",
    "derived_max_model_len",
    "tried_to_allocate_gib",
    "preemptions",
)
# How a finding knows, as the text says it: a logged one needs no word.
EVIDENCE = {
    "logged": "",
    "inferred": "(inferred) ",
    "confirmed": "(inferred, confirmed by /metrics) ",
    "metrics": "(from /metrics) ",
}


def command_title(report: Report) -> str:
    # Without the launch command in the log there is no command to correct, only flags to change.
    return "Corrected command" if report.command.corrected else "Change to the launch command"


def top_finding(report: Report) -> Finding | None:
    """The finding the verdict rests on; else the first one (advice on a healthy log)."""
    findings = report.findings
    return next((f for f in findings if f.rule == report.verdict.rule), findings[0] if findings else None)
