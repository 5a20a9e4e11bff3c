"""The timeline's data: a run (one launch of vLLM) and its events (facts placed in time)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from advisor.parse.facts import Fact, Number
from advisor.timeline.kinds import ENGINE_DEATH_KINDS, READY_KINDS, SERVED_KINDS

# A stats line's engine: the process that printed it, and the engine's index it names.
Engine = tuple[str | None, Number | None]
# An engine's last stats values, and how many of its lines in a row processed no token while requests ran.
EngineStats = tuple[dict[str, Number], int]
# The derived values of an event that moved nothing: one read-only mapping shared by all of them.
NO_CHANGE: Mapping[str, float] = MappingProxyType({})


@dataclass(slots=True)  # one per stats line of a long log: no per-instance dict
class Event:
    """A fact placed in time: the run phase when it happened and, for failures, the stage."""

    fact: Fact
    phase: str  # startup | runtime
    stage: str = ""  # model_init | kv_sizing | graph_capture | server_start | serving | "" when unknown
    frames: tuple[str, ...] = ()
    derived: Mapping[str, float] = field(default_factory=lambda: NO_CHANGE)  # read-only: shared

    @property
    def kind(self) -> str:
        return self.fact.kind

    @property
    def line(self) -> int:
        return self.fact.line


@dataclass
class Run:
    """One launch of vLLM: its facts from the first marker to the next launch."""

    index: int
    facts: list[Fact] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    # Read by place() in the pass that places the events: a packed fact builds its values on each read.
    values: dict[str, Number] = field(default_factory=dict)  # the last value of each name
    peak_running_reqs: Number | None = None  # the most requests an event shows running at once
    vllm_version: str | None = None  # the last version the run states
    backend: str | None = None  # the device vLLM runs on, as the lines name it first (cpu, cuda, xpu, ...)
    progress_line: int | None = None  # the last line showing startup or serving: what fails after it ends the run

    def kinds(self) -> set[str]:
        return {f.kind for f in self.facts}

    @property
    def serving_line(self) -> int | None:
        """The first line from which the server serves: its readiness, bar the engine's own ("init engine ...
        took"), after which the API server still starts (its chat template, LoRA modules, routes)."""
        return next((f.line for f in self.facts if f.kind in READY_KINDS and "init_seconds" not in f.values), None)

    @property
    def served_line(self) -> int | None:
        """The first sign that the server had got ready before it (SERVED_KINDS), if its start did not fail first."""
        for fact in self.facts:
            if fact.kind == "engine_start_failed":
                return None
            if fact.kind in SERVED_KINDS:
                return fact.line
        return None

    @property
    def last_ready_line(self) -> float:
        """The last sign of readiness, the engine's own included (-inf when none): what failed before it,
        vLLM went on from; the signs the server had served count unless its start failed first."""
        served = SERVED_KINDS if self.served_line is not None else set()
        return max((f.line for f in self.facts if f.kind in READY_KINDS or f.kind in served), default=-math.inf)

    @property
    def shutdown_line(self) -> int | None:
        """The first sign of a stop: vLLM's shutdown, or the KeyboardInterrupt of the operator's Ctrl-C.
        A shutdown that names no signal, in a run that shows none, with the engine's death after it, is
        that death's doing, no stop: vLLM's server exits when its engine dies, and another process may
        log the death after the exit began."""
        stops = [f for f in self.facts if f.kind == "shutdown" or (f.kind == "exception" and _interrupted(f))]
        if not stops:
            return None
        first = stops[0].line
        signalled = any(f.kind == "exception" or f.text.get("signalled") for f in stops)
        if not signalled and any(f.kind in ENGINE_DEATH_KINDS and f.line > first for f in self.facts):
            return None
        return first

    def launch_args(self) -> dict[str, Any]:
        return next((f.args for f in self.facts if f.kind in ("non_default_args", "namespace_args") and f.args), {})

    def root_cause(self, before_line: int) -> str | None:
        """The first exception logged in the run up to a line, as 'Type: message'."""
        first = next((f for f in self.facts if f.kind == "exception" and f.line <= before_line), None)
        # Without its full stop: the rules' sentences put their own after it.
        return f"{first.text['type']}: {first.text.get('message', '')}".strip(": ").rstrip(".") if first else None


def _interrupted(exception: Fact) -> bool:
    return exception.text.get("type", "").endswith("KeyboardInterrupt")
