"""Whether a fix that changes precision keeps the output: greedy answers of the fix and of a reference.

A fix that changes what is computed (`--kv-cache-dtype fp8`, `--quantization`, `--dtype`) can start and
answer, yet answer otherwise. The fix and a reference launch (the same command with those flags as the
original had them) answer the same prompts greedily with log-probabilities; the tokens that agree, and how
far the log-probabilities of the agreeing tokens moved, say whether the output drifted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.command import apply
from advisor.live.launch import Round, flag_value, launch, reason

PRECISION_FLAGS = ("--kv-cache-dtype", "--quantization", "--dtype")
PROMPTS = (
    "The capital of France is",
    "def fibonacci(n):",
    "A KV cache stores the keys and values of",
    "1, 2, 3, 4, 5,",
)
ANSWER_TOKENS = 16
# The answers' length does not depend on the context length: a short one lets the reference start where the
# fix's memory was too tight for the original precision.
REFERENCE_MAX_MODEL_LEN = 1024
# Past either, the fix "starts, but changes the output".
MIN_IDENTICAL_PCT = 90.0
MAX_MEAN_LOGPROB_DRIFT = 0.1  # nats, over the tokens both answers share at the same place


@dataclass(frozen=True)
class Drift:
    """How the fix's answers differ from the reference's."""

    compared: int  # token places compared (the shorter answer of each prompt)
    identical_pct: float
    mean_logprob_drift: float | None  # over the places where both chose the same token

    @property
    def changes_output(self) -> bool:
        drifted = self.mean_logprob_drift is not None and self.mean_logprob_drift > MAX_MEAN_LOGPROB_DRIFT
        return self.identical_pct < MIN_IDENTICAL_PCT or drifted

    def summary(self) -> str:
        moved = "-" if self.mean_logprob_drift is None else f"{self.mean_logprob_drift:.4f}"
        return (
            f"{self.identical_pct:g}% of {self.compared} greedy tokens identical to the reference's, "
            f"mean log-probability drift {moved} nats (thresholds: {MIN_IDENTICAL_PCT:g}%, {MAX_MEAN_LOGPROB_DRIFT:g})"
        )


def precision_changed(original: list[str], fix: list[str]) -> list[str]:
    """The flags of what is computed that the fix changes."""
    return [flag for flag in PRECISION_FLAGS if flag_value(original, flag) != flag_value(fix, flag)]


def reference_command(original: list[str], fix: list[str]) -> list[str]:
    """The fix with its precision flags as the original had them, and a short context."""
    restored = {flag: flag_value(original, flag) for flag in precision_changed(original, fix)}
    length = flag_value(fix, "--max-model-len")
    short = str(min(int(length), REFERENCE_MAX_MODEL_LEN)) if length and length.isdigit() else None
    return apply(fix, {**restored, "--max-model-len": short or str(REFERENCE_MAX_MODEL_LEN)})


def compare(reference: list[list[tuple[str, float]]], fix: list[list[tuple[str, float]]]) -> Drift:
    places = same = 0
    moved: list[float] = []
    for theirs, ours in zip(reference, fix, strict=True):
        for (token_a, logprob_a), (token_b, logprob_b) in zip(theirs, ours, strict=False):
            places += 1
            if token_a == token_b:
                same += 1
                moved.append(abs(logprob_a - logprob_b))
    return Drift(
        compared=places,
        identical_pct=round(100 * same / places, 1) if places else 0.0,
        mean_logprob_drift=round(sum(moved) / len(moved), 4) if moved else None,
    )


def compare_output(
    original: list[str], fix: list[str], after: Round, python: Path, workdir: Path, timeout: float, model: str | None
) -> tuple[Round, Drift | None, str]:
    """The reference launch, the drift of the fix's answers from its answers, and the note that says so; the
    fix's round becomes "changes the output" past the thresholds."""
    reference = launch(
        reference_command(original, fix),
        python,
        workdir,
        timeout,
        model=model,
        prompts=PROMPTS,
        answer_tokens=ANSWER_TOKENS,
    )
    if reference.outcome != "fixed" or not all(reference.answers) or not all(after.answers):
        return (
            reference,
            None,
            f"output not compared: the reference launch did not answer ({reason(reference) or 'no greedy answer'})",
        )
    drift = compare(reference.answers, after.answers)
    if drift.changes_output:
        after.outcome, after.note = "changes the output", "starts, but changes the output"
    return reference, drift, f"output against the original precision: {drift.summary()}"
