"""The tuning ladder: the fix's knob raised round by round on a real server, up to its first failure."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import TextIO

from advisor.command import apply
from advisor.defaults import block_size
from advisor.live.launch import (
    Round,
    changed_flags,
    flag_value,
    launch,
    memory_changed,
    reason,
    sequences_that_fit,
    shown,
)


def ladder(
    start: list[str],
    knob: str,
    python: Path,
    workdir: Path,
    timeout: float,
    rounds: int,
    max_tokens: int,
    load: int = 0,
    model: str | None = None,
    model_limit: int | None = None,
    progress: TextIO | None = None,
) -> list[Round]:
    """Raise the fix's knob (--max-model-len, or --max-num-seqs for a concurrency fix) step by step while
    the server stays fixed, never past the model's length limit; stop at the first round that fails
    (a failure while the machine's memory changed is launched once more). A --max-num-seqs ladder goes
    from the log's advice to what the load's requests fit in the KV cache, then on up."""

    def relaunch(argv: list[str]) -> Round:
        return launch(
            argv,
            python,
            workdir,
            timeout,
            load=load or _sequences(argv),
            max_tokens=max_tokens,
            model=model,
            progress=progress,
        )

    results: list[Round] = []
    argv = start
    for _ in range(rounds):
        result = relaunch(argv)
        previous = results[-1] if results else None
        if (
            previous
            and previous.outcome == "fixed"
            and result.outcome != "fixed"
            and memory_changed(
                (previous.free_memory_gib, previous.total_memory_gib), (result.free_memory_gib, result.total_memory_gib)
            )
        ):
            result = relaunch(argv)
            result.note = "launched twice: the machine's memory changed"
        results.append(result)
        if result.outcome != "fixed":
            break
        raised = _raise(argv, knob, model_limit)
        if knob == "--max-num-seqs" and result.kv_cache_tokens and result.request_tokens and len(results) == 1:
            # The log's advice assumed full-length requests; this load's own fit is the next step, if larger.
            fit = sequences_that_fit(int(result.kv_cache_tokens), result.request_tokens, block_tokens(result))
            raised_to = flag_value(raised, knob)
            assert raised_to is not None  # _raise has just set the knob
            if fit > int(raised_to):
                raised = apply(argv, {knob: str(fit)})
        if raised == argv:
            break  # at the limit: nothing further to try
        argv = raised
    return results


def block_tokens(result: Round) -> int:
    """The KV block size of the backend the round's log names (128 on the CPU backend, 16 on CUDA)."""
    return block_size(result.backend)


def _sequences(argv: list[str]) -> int:
    """Concurrent requests for a round: the sequence limit, kept small enough for this machine."""
    limit = int(flag_value(argv, "--max-num-seqs") or 4)
    return max(1, min(limit, 16))


def _raise(argv: list[str], flag: str, model_limit: int | None = None) -> list[str]:
    current = flag_value(argv, flag)
    if flag == "--max-model-len":
        step = math.ceil(int(current or 1024) * 1.25 / 1024) * 1024
        step = min(step, model_limit) if model_limit else step
    elif flag == "--max-num-seqs":
        value = int(current or 4)
        step = value + max(1, value // 2)
    else:
        raise ValueError(f"the ladder does not raise {flag}")
    return apply(argv, {flag: str(step)})


def ladder_knob(original: list[str] | None, argv: list[str]) -> str:
    """The fix's knob when it is one the ladder raises; else the length."""
    changed = changed_flags(original, argv) if original else []
    return "--max-num-seqs" if "--max-num-seqs" in changed else "--max-model-len"


def render_ladder(results: list[Round], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([asdict(r) for r in results], indent=2)
    rows = ["round  outcome        KV tokens  TTFT p50 s  tokens/s  peak RSS MB  why / command"]
    for i, r in enumerate(results, 1):
        rows.append(
            f"{i:>5}  {r.outcome:<13}  {shown(r.kv_cache_tokens):>9}  {shown(r.ttft_p50_s):>10}  "
            f"{shown(r.tokens_per_s):>8}  {shown(r.peak_rss_mb):>11}  {reason(r) or r.note or 'ok'}"
        )
        rows.append(f"{'':>5}  {r.command}")
    good = [r for r in results if r.outcome == "fixed"]
    rows.append(f"last good command: {good[-1].command}" if good else "no round succeeded")
    return "\n".join(rows)
