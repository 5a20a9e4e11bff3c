"""Placing: each fact of a run given its phase and stage, tracebacks joined with their final exception.

A fact's place depends on the whole run (where serving began, which lines a traceback covers) and
on the facts before it. `Context` is the first, computed in one pass; `Placer` walks the facts in
order with the second. A stream keeps its placer while the context stays the same: the facts it
appends are placed alone, not the whole run again for each line it judges.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter

from advisor.parse.facts import Fact, Number
from advisor.timeline.events import NO_CHANGE, Engine, EngineStats, Event, Run
from advisor.timeline.excerpt import started_mid_way
from advisor.timeline.frames import (
    FOREIGN,
    NO_STAGE,
    SERVING_LOOPS,
    in_serving_loop,
    logger_marks,
    stage_from_frames,
    traceback_stages,
)
from advisor.timeline.kinds import KV_SIZING_KINDS, LOGGED_KINDS, PROGRESS_KINDS, STAGE_STEP_KINDS, TRACEBACK_KINDS


def place(run: Run) -> list[Event]:
    """Give each fact of a run its phase and stage, joining tracebacks with their final exception;
    note the run's last values, peak of running requests, backend and last progress on the way."""
    placer = Placer(Context.of(run))
    return placer.finish(run, placer.place(run.facts))


@dataclass(frozen=True)
class Context:
    """What placing a fact reads of the whole run."""

    # Facts from this line on happen at runtime; never ready: all runtime if the excerpt began after
    # readiness, else runtime from the first sign that it had got ready (a request it answered), else
    # all startup.
    runtime_from: float
    stage_of_line: dict[int, tuple[str, tuple[str, ...]]]
    open_frames: dict[str | None, list[str]]  # the tracebacks the run ends inside of, by process
    weights_lines: frozenset[int]
    compile_lines: frozenset[int]
    loaded_at: dict[str | None, int]
    captured_late: frozenset[int]
    headers: frozenset[int]

    @classmethod
    def of(cls, run: Run) -> Context:
        facts = run.facts
        stage_of_line, open_frames = traceback_stages(facts)
        runtime_from: float
        if run.serving_line is not None:
            runtime_from = run.serving_line
        elif started_mid_way(facts, stage_of_line):
            runtime_from = -math.inf
        else:
            runtime_from = math.inf if (served := run.served_line) is None else served
        return cls(
            runtime_from,
            stage_of_line,
            open_frames,
            frozenset(f.line for f in facts if f.kind == "weights_create_failed"),
            frozenset(f.line for f in facts if f.text.get("compiling")),
            _loaded_at(facts),
            _before_unfinished_capture(facts),
            _traceback_headers(facts),
        )


class Placer:
    """The walk over a run's facts in order: the state each fact's place reads of the facts before it."""

    def __init__(self, context: Context):
        self.context = context
        self.previous_stats: dict[Engine, EngineStats] = {}
        self.capturing = self.sized = False
        self.last_values: dict[str, Number] = {}
        self.peak: Number | None = None
        self.backend: str | None = None
        self.progress: int | None = None
        self.in_traceback: set[str | None] = set()  # the processes whose last fact was a line of a traceback

    def place(self, facts: Iterable[Fact]) -> list[Event]:
        """The events of the next facts (a traceback's lines and a script's own exceptions make none)."""
        return [event for fact in facts if (event := self._place(fact)) is not None]

    def _place(self, fact: Fact) -> Event | None:
        context = self.context
        # Read once: a packed fact builds its values on each read.
        kind, line, values = fact.kind, fact.line, fact.values
        self.last_values.update(values)
        if self.backend is None:
            self.backend = fact.text.get("device")
        if kind in PROGRESS_KINDS and not _stuck(kind, values):
            self.progress = line
        if kind in TRACEBACK_KINDS:
            self.in_traceback.add(fact.process)
            return None
        if kind == "error_record" and (fact.process in self.in_traceback or id(fact) in context.headers):
            # A line of a traceback its logger call prints (a code line the paste unindented), or its header.
            return None
        self.in_traceback.discard(fact.process)
        if kind in STAGE_STEP_KINDS:  # the other kinds leave both as they are
            capturing = self.capturing or kind == "graph_capture_start"
            self.capturing = capturing and kind not in ("graph_captured", "ready")
            self.sized = self.sized or kind in KV_SIZING_KINDS
        stage, frames = context.stage_of_line.get(line, NO_STAGE)
        if kind == "error_record":  # a handler's own error record: one request's (answered, or not)
            frames = (*logger_marks(fact), *frames)
        if stage == FOREIGN and kind == "exception":  # a script's own traceback: not vLLM failing
            return None
        # Its stage is already its frames' (or what it raised): only the serving loops' own frames are left to ask.
        serving = stage == "serving" or not SERVING_LOOPS.isdisjoint(frames)
        phase = "runtime" if line >= context.runtime_from or serving else "startup"
        self.sized = self.sized or stage == "kv_sizing"  # an error raised while sizing: sizing had begun
        if not stage:
            compiling = self.capturing or id(fact) in context.captured_late or line in context.compile_lines
            profiling = self.sized or line > context.loaded_at.get(fact.process, math.inf)
            stage = _stage_from_context(line in context.weights_lines, phase, compiling, profiling)
        running = values.get("running_reqs")
        if running is not None and (self.peak is None or running > self.peak):  # the first of equal peaks
            self.peak = running
        if kind == "stats":
            return _stats_event(Event(fact, phase, stage, frames), values, self.previous_stats)
        return Event(fact, phase, stage, frames)

    def finish(self, run: Run, events: list[Event]) -> list[Event]:
        """The run's events, with a stub for each traceback it ends inside, in line order; the run noted."""
        self._describe(run)
        return sorted(events + self._stubs(run.facts), key=attrgetter("fact.line"))

    def _describe(self, run: Run) -> None:
        """Note on the run what the walk saw: its last values, peak of running requests, backend, last
        progress and version."""
        run.values, run.peak_running_reqs, run.backend = self.last_values, self.peak, self.backend
        run.progress_line = self.progress
        versions = (f.text["vllm_version"] for f in reversed(run.facts) if f.text.get("vllm_version"))
        run.vllm_version = next(versions, None)

    def _stubs(self, facts: list[Fact]) -> list[Event]:
        """An excerpt cut inside a traceback, even right after its "Traceback (most recent call last):"."""
        stubs = []
        for process, cut_frames in self.context.open_frames.items():
            last = max(f.line for f in facts if f.process == process)
            level = next(f.level for f in reversed(facts) if f.process == process)
            stub = Fact(kind="incomplete_traceback", line=last, process=process, level=level)
            phase = "runtime" if last >= self.context.runtime_from or in_serving_loop(cut_frames) else "startup"
            stubs.append(Event(stub, phase, stage_from_frames(tuple(cut_frames)), tuple(cut_frames)))
        return stubs


def _traceback_headers(facts: list[Fact]) -> frozenset[int]:
    """The ids of the error records whose process's next fact is a traceback: the logger call's own words
    before the traceback it prints ("WorkerProc hit an exception."), which the traceback speaks for."""
    headers: set[int] = set()
    last_record: dict[str | None, Fact] = {}
    for fact in facts:
        record = last_record.pop(fact.process, None)
        if record is not None and fact.kind in LOGGED_KINDS:
            headers.add(id(record))
        if fact.kind == "error_record":
            last_record[fact.process] = fact
    return frozenset(headers)


def _before_unfinished_capture(facts: list[Fact]) -> frozenset[int]:
    """The ids of the facts printed before another process's CUDA-graph capture that never finished.

    Ray prints its workers' lines late, and folds repeats into one ("[repeated 7x across
    cluster]"), so the driver's error can stand before the capture it happened in. A capture that
    no "captured" or ready line follows was still under way when the run ended.
    """
    start = next((f for f in reversed(facts) if f.kind == "graph_capture_start" and f.process), None)
    if start is None or any(f.kind in ("graph_captured", "ready") and f.line > start.line for f in facts):
        return frozenset()
    return frozenset(id(f) for f in facts if f.line <= start.line and f.process != start.process)


def _loaded_at(facts: list[Fact]) -> dict[str | None, int]:
    """Where each process had its model loaded ("Model loading took"): what fails after it with no step
    of its own fails in the profiling run that sizes the KV cache, not in the weights."""
    loaded: dict[str | None, int] = {}
    for fact in facts:
        if fact.kind == "weights":
            loaded.setdefault(fact.process, fact.line)
    return loaded


def _stage_from_context(creating_weights: bool, phase: str, capturing: bool, sized: bool) -> str:
    if creating_weights:
        return "model_init"
    if phase == "runtime":
        return "serving"
    if capturing:
        return "graph_capture"
    return "kv_sizing" if sized else "model_init"


def _stuck(kind: str, values: Mapping[str, Number]) -> bool:
    """A stats line of requests waiting while none runs and nothing was processed: no progress."""
    return (
        kind == "stats"
        and values.get("waiting_reqs", 0) > 0
        and values.get("running_reqs") == 0
        and values.get("prompt_throughput") == 0
        and values.get("generation_throughput") == 0
    )


def _stats_event(event: Event, values: dict[str, Number], previous: dict[Engine, EngineStats]) -> Event:
    """A stats line's event, with how the queues moved since its engine's line before it and, from the
    second, how many lines in a row processed no token while requests ran (`previous`: each engine's
    last values and that count, updated)."""
    engine = (event.fact.process, values.get("engine"))
    before, stalled = previous.get(engine, (None, 0))
    stalled = stalled + 1 if _tokenless(values) else 0
    change = _stats_change(before, values)
    event.derived = {**change, "stalled_lines": stalled} if stalled > 1 else change
    previous[engine] = (values, stalled)
    return event


def _tokenless(values: Mapping[str, Number]) -> bool:
    """A stats line of requests running with no token processed in its interval."""
    return (
        values.get("running_reqs", 0) > 0
        and values.get("prompt_throughput") == 0
        and values.get("generation_throughput") == 0
    )


def _stats_change(before: dict[str, float] | None, after: dict[str, float]) -> Mapping[str, float]:
    """How the scheduler queues moved since the previous stats line of the same engine (their values)."""
    if before is None:
        return NO_CHANGE
    change = {}
    # Only movements in the telling direction: a rise in running is not a "negative drop". A count
    # the line did not print (cut short by a CR) is unknown, not zero: it moved nothing.
    running_before, running_after = before.get("running_reqs"), after.get("running_reqs")
    if running_before is not None and running_after is not None and running_before > running_after:
        change["running_drop"] = running_before - running_after
    waiting_before, waiting_after = before.get("waiting_reqs"), after.get("waiting_reqs")
    if waiting_before is not None and waiting_after is not None and waiting_after > waiting_before:
        change["waiting_rise"] = waiting_after - waiting_before
    usage_before, usage_after = before.get("kv_cache_usage_pct"), after.get("kv_cache_usage_pct")
    if usage_before is not None and usage_after is not None:
        # A preemption frees the blocks it took: the cache was full on the line before, not after.
        change["kv_usage_peak_pct"] = max(usage_before, usage_after)
        if usage_after > usage_before:
            change["kv_usage_rise"] = round(usage_after - usage_before, 1)
    return change or NO_CHANGE
