"""Everything vLLM can print, from its own source, against a real healthy log of vLLM 0.32 (fixtures/live/healthy.log).

- What vLLM logs at INFO and WARNING is no failure: every such logger call of every release
  (fixtures/wordings/records.json, 0.1.0 - 0.33.0, about 4,900), printed with sample values right before the
  server's readiness, leaves the log healthy; the few that state a failure themselves are listed with the
  verdict they give. A false alarm the corpus cannot show is found here: a notice a new release added, read
  by a grammar alternative meant for an error.
- What vLLM raises ends a run in failure: every raise with a message of every release
  (fixtures/wordings/raises.json, about 12,500), printed as the engine's logged traceback while serving,
  makes the log a failure, never healthy.
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


def chunks(items: list[dict], size: int, name: str) -> list:
    """The items in parameters of `size`: the first in every run, the others under -m exhaustive."""
    return [
        pytest.param(
            items[start : start + size], id=f"{name}-{start}", marks=[] if start == 0 else [pytest.mark.exhaustive]
        )
        for start in range(0, len(items), size)
    ]


def injected(entry: dict) -> list[str]:
    """The healthy log with the logger call printed by its engine process, as its era's last envelope prints it."""
    call = {**entry, "call": "logger." + entry["level"].lower()}
    line = "(EngineCore pid=6866) " + samples.lines(call)[-1]
    return [*HEALTHY[:READY], line, *HEALTHY[READY:]]


@pytest.mark.parametrize("chunk", chunks(CALLS, 250, "calls"))
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


RAISES = json.loads((FIXTURES / "wordings/raises.json").read_text())
# The last stats line while serving: the operator's SIGTERM follows it.
SERVING = max(i for i, line in enumerate(HEALTHY) if "Avg prompt throughput" in line) + 1
ENGINE_ERROR = "(APIServer pid=6836) ERROR 11-29 10:35:09 [core_client.py:1] "


def raised(entry: dict) -> list[str]:
    """The healthy log whose engine core raised while serving, its traceback logged as V1's client logs it."""
    exception = samples.lines({**entry, "call": entry["raises"]})[-1]
    traceback = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/vllm/v1/engine/core.py", line 1, in run_engine_core',
        exception,
    ]
    return [*HEALTHY[:SERVING], *(ENGINE_ERROR + line for line in traceback), *HEALTHY[SERVING:]]


@pytest.mark.parametrize("chunk", chunks(RAISES, 500, "raises"))
def test_a_raise_while_serving_is_a_failure(chunk):
    healthy = []
    for entry in chunk:
        verdict = pipeline.analysis(raised(entry), name="healthy.log").diagnosis().report.verdict
        if verdict.phase == "healthy":
            healthy.append((entry["raises"], entry["file"], entry["template"][:100]))
    assert not healthy, healthy


def test_the_calls_span_every_release():
    assert {e["first"] for e in CALLS} >= {"0.1.0"} and {e["last"] for e in CALLS} >= {"0.33.0"}
    assert len(CALLS) > 4000
