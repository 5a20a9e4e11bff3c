"""Timeline: facts in order, grouped into runs, each run's facts placed (timeline.placement)."""

from __future__ import annotations

from collections.abc import Iterable

from advisor.parse.facts import Fact
from advisor.timeline.events import Run
from advisor.timeline.kinds import FINISHED_KINDS, RUN_MARKERS, STARTING_KINDS
from advisor.timeline.placement import place


def split_runs(facts: Iterable[Fact]) -> list[Run]:
    """Group facts into runs: a restart in the same file begins a new one."""
    runs = [Run(0)]
    seen: set[str] = set()  # kinds of the current run, kept as we go: Run.kinds() per fact was quadratic
    current = runs[0].facts
    for fact in facts:
        kind = fact.kind
        if kind in STARTING_KINDS and starts_new_run(seen, fact):  # the first test spares a call per fact
            runs.append(Run(len(runs)))
            current, seen = runs[-1].facts, set()
        current.append(fact)
        seen.add(kind)
    for run in runs:
        run.events = place(run)
    return [run for run in runs if run.facts]


def starts_new_run(kinds: set[str], fact: Fact) -> bool:
    """Whether a fact begins a new launch, given the kinds of fact the current run has shown."""
    finished = not kinds.isdisjoint(FINISHED_KINDS)
    if fact.kind in RUN_MARKERS:
        return finished or fact.kind in kinds
    return fact.kind == "engine_config" and finished
