"""What vLLM logs at INFO and WARNING on a healthy run is no failure: every such logger call of every release
(fixtures/wordings/records.json, 0.1.0 - 0.33.0, about 4,900), printed with sample values into a real healthy
log of vLLM 0.32 (fixtures/live/healthy.log) right before its readiness, leaves that log healthy. The few that
state a failure themselves are listed with the verdict they give.

A false alarm the corpus cannot show is found here: a notice a new release added, read by a grammar
alternative meant for an error (vLLM's "Address already in use. Retrying with a new port." was one).
"""

from __future__ import annotations

import json
import sys

import pytest
from conftest import FIXTURES, ROOT

from advisor import pipeline

sys.path.insert(0, str(ROOT / "tools" / "wordings"))
import samples

HEALTHY = (FIXTURES / "live/healthy.log").read_text().splitlines()
READY = next(i for i, line in enumerate(HEALTHY) if "Application startup complete" in line)
CALLS = [
    entry
    for entry in json.loads((FIXTURES / "wordings/records.json").read_text())
    if entry["level"] in ("INFO", "WARNING")
]
# The notices that state a failure of their own, and the verdict each gives (the start of its template).
FAILURES = {
    "Input prompt (": ("runtime", "request_exceeds_max_model_len"),
    "Sequence group ": ("runtime", "preemption"),
    "[shutdown] MPClient: engine core exited unexpectedly": ("runtime", "engine_dead"),
}
CHUNK = 250
CHUNKS = [CALLS[start : start + CHUNK] for start in range(0, len(CALLS), CHUNK)]


def injected(entry: dict) -> list[str]:
    """The healthy log with the logger call printed by its engine process, as its era's last envelope prints it."""
    call = {**entry, "call": "logger." + entry["level"].lower()}
    line = "(EngineCore pid=27271) " + samples.lines(call)[-1]
    return [*HEALTHY[:READY], line, *HEALTHY[READY:]]


@pytest.mark.parametrize(
    "chunk",
    [
        pytest.param(c, id=f"calls-{i * CHUNK}", marks=[] if i == 0 else [pytest.mark.exhaustive])
        for i, c in enumerate(CHUNKS)
    ],
)
def test_a_notice_leaves_a_healthy_run_healthy(chunk):
    wrong = []
    for entry in chunk:
        verdict = pipeline.analysis(injected(entry), name="healthy.log").diagnosis().report.verdict
        expected = next(
            (v for start, v in FAILURES.items() if entry["template"].startswith(start)), ("healthy", "none")
        )
        if (verdict.phase, verdict.failure) != expected:
            wrong.append((verdict.phase, verdict.failure, verdict.rule, entry["file"], entry["template"][:100]))
    assert not wrong, wrong


def test_the_calls_span_every_release():
    assert {e["first"] for e in CALLS} >= {"0.1.0"} and {e["last"] for e in CALLS} >= {"0.33.0"}
    assert len(CALLS) > 4000
