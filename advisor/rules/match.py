"""Matching: the rules over each run's events, each event in the context of its run."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from advisor.parse.facts import Fact
from advisor.parse.messages import STATE_NAMES
from advisor.rules.condition import Condition
from advisor.rules.remedies import arithmetic
from advisor.rules.schema import SEVERITY_ORDER, Rule
from advisor.timeline.events import Event, Run
from advisor.timeline.frames import ANSWERED, ONE_REQUEST, SERVING_LOOPS

if TYPE_CHECKING:
    from advisor.plan.model import ModelShape

log = logging.getLogger(__name__)


@dataclass
class Match:
    """A rule that fired on an event, with the context its texts and flags are filled from."""

    rule: Rule
    event: Event
    context: dict[str, Any]


# Messages that state a device's free and total memory at startup, one per rank.
FREE_AT_STARTUP = ("free_memory_below_utilization", "cpu_memory_below_utilization")
# Names of the whole run that an event's own values and words do not override.
RUN_WIDE = ("kinds", "vllm_version", "backend")


class RunContext:
    """What the contexts of a run's events take from the whole run, computed once per run (per event
    it made matching quadratic in the length of the run, a day of stats lines).

    A context is made of three layers: the run's names, the event's own names over them, and the
    arithmetic derived from both over all. Within a run only the event's own names (and so the
    arithmetic) differ: an event costs a dict of its own names, the whole context is made only
    where it is read in full.
    """

    def __init__(self, run: Run, model: ModelShape | None = None):
        self.names: dict[str, Any] = {
            f"arg_{k}": v for k, v in run.launch_args().items() if isinstance(v, (int, float, str))
        }
        # A state the stats lines report changes from line to line: an event sees only its own, never
        # a later line's (batch would then judge an earlier line by what a stream had not yet read).
        self.names.update({name: value for name, value in run.values.items() if name not in STATE_NAMES})
        if model is not None:
            self.names.update(model_names(model, self.names, run.backend))
        # Each rank reports its own device's free memory: a utilization must fit the one with the least.
        free = [f.values for f in run.facts if f.kind in FREE_AT_STARTUP and f.values.get("total_gpu_gib")]
        if free:
            least = min(free, key=lambda values: values["free_gpu_gib"] / values["total_gpu_gib"])
            self.names.update(least_free_gpu_gib=least["free_gpu_gib"], least_total_gpu_gib=least["total_gpu_gib"])
        if run.peak_running_reqs is not None:
            self.names["peak_running_reqs"] = run.peak_running_reqs
        self.names.update(kinds=sorted(run.kinds()), vllm_version=run.vllm_version)
        first_exception = next((f.line for f in run.facts if f.kind == "exception"), None)
        # Facts are in line order, so the run's first exception is the first one up to any line.
        self.root_cause = run.root_cause(first_exception) if first_exception is not None else None
        self.root_cause_from = math.inf if first_exception is None else first_exception
        shutdown_line = run.shutdown_line
        self.shutdown_from = math.inf if shutdown_line is None else shutdown_line
        # A message line can state several facts ("... is preempted ... total_num_cumulative_preemption=151"):
        # each of its events also sees the others' values, as a stream judges a line once it is whole.
        # Facts are in line order: a line's facts stand next to each other.
        self.line_values: dict[int, dict[str, Any]] = {}
        previous: Fact | None = None
        for fact in run.facts:
            if previous is not None and fact.line == previous.line:
                self.line_values.setdefault(fact.line, dict(previous.values)).update(fact.values)
            previous = fact
        progress_line = run.progress_line
        self.progress_until = -math.inf if progress_line is None else progress_line
        self.ready_until = run.last_ready_line
        self.names["backend"] = run.backend

    def own_names(self, event: Event) -> dict[str, Any]:
        """The event's own names: its values, their changes and its words, its kind, level, phase, stage
        and frames (answered: a request handler logged it and answered the client), the exception it
        states, the root cause and shutdown it comes after, and whether it ends the run (at_end: no sign
        of startup progress or serving follows it)."""
        fact = event.fact
        line, text = fact.line, fact.text
        names: dict[str, Any] = fact.values  # a dict of its own
        siblings = self.line_values.get(line)
        if siblings:
            names = {**siblings, **names}
        if event.derived:
            names.update(event.derived)
        if text:
            names.update(text)
        names["kind"] = fact.kind  # one by one: quicker than a dict merged in
        names["level"] = fact.level
        names["phase"] = event.phase
        names["stage"] = event.stage
        names["frames"] = list(event.frames)
        names["answered"] = ANSWERED in event.frames
        # Unless the engine's own loop raised it (its output handler), seen through that request's stream.
        names["one_request"] = ONE_REQUEST in event.frames and SERVING_LOOPS.isdisjoint(event.frames)
        names["exception"] = text.get("type", "")
        names["root_cause"] = self.root_cause if line >= self.root_cause_from else None
        names["shutting_down"] = line >= self.shutdown_from
        names["at_end"] = line >= self.progress_until  # nothing after it shows vLLM going on
        for name in RUN_WIDE:
            names.pop(name, None)
        # The run got ready after it: a failure after the engine's readiness alone (the API server's own
        # start failing) did not.
        names["became_ready"] = self.ready_until > line
        return names

    def whole(self, own: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
        """The context a rule reads and its texts are filled from: the three layers, the upper ones winning."""
        return {**self.names, **own, **derived}


def model_names(model: ModelShape, names: dict[str, Any], backend: str | None) -> dict[str, Any]:
    """The model's KV figures (plan's, from its folder) at the run's length, TP, KV dtype and block size."""
    length = names.get("max_seq_len") or names.get("arg_max_model_len")
    if not isinstance(length, int) or length <= 0:
        return {}

    def setting(value: str, arg: str, default: int | None) -> int | None:
        # Whole numbers in vLLM's range only: a crafted log's 1e15 or 0.5 is not a setting to plan with.
        given = names.get(value) or names.get(arg)
        return given if isinstance(given, int) and 0 < given <= 1 << 16 else default

    from advisor.plan.for_log import kv_figures  # here: only a run given a model folder plans

    figures = kv_figures(
        model,
        device="cpu" if backend == "cpu" else "cuda",
        max_model_len=length,
        tensor_parallel=setting("tensor_parallel_size", "arg_tensor_parallel_size", 1) or 1,
        kv_cache_dtype=str(names.get("arg_kv_cache_dtype") or "auto"),
        block_size=setting("block_size", "arg_block_size", None),
        max_num_seqs=setting("arg_max_num_seqs", "arg_max_num_seqs", None),
    )
    return {**figures, "model_kv_length": length, "model_dir": str(model.path)} if figures else {}


def context_for(run: Run, event: Event, model: ModelShape | None = None) -> dict[str, Any]:
    """Names a rule may use on an event: the run's launch arguments (arg_*), last values, peak running
    requests, kinds and version, the model's KV figures when its folder is given, the event's own
    names, and the arithmetic derived from them all."""
    scope = RunContext(run, model)
    own = scope.own_names(event)
    return scope.whole(own, arithmetic({**scope.names, **own}))


def match_run(
    run: Run, rules: tuple[Rule, ...], events: list[Event] | None = None, model: ModelShape | None = None
) -> list[Match]:
    """Each rule fires at most once per run, on the first event (of `events`, default all) that satisfies it.

    Events are walked once: an event's own names are gathered only when a rule still waiting for
    its kind is left, and shared by those rules. The conditions read only the names they name, and no
    arithmetic: that, and the whole context, are made only for the events a rule fires on.
    """
    scope = RunContext(run, model)
    waiting: dict[str, list[int]] = {}  # kind -> indexes of the rules still waiting for it, in rule order
    for index, rule in enumerate(rules):
        for kind in dict.fromkeys(rule.event):
            waiting.setdefault(kind, []).append(index)

    def retire(index: int) -> None:  # new lists: the event being judged keeps its own
        for kind in dict.fromkeys(rules[index].event):
            waiting[kind] = [other for other in waiting[kind] if other != index]

    found: dict[int, Match] = {}
    conditions = [Condition(rule.when, scope.names) for rule in rules]

    def holds(index: int, event: Event) -> Any:
        own = scope.own_names(event)
        try:
            return conditions[index](own)
        except Exception:  # judged again, and logged, in the walk below
            return False

    # A sustained rule judged on a run's later events only (the stream) counts the streak before them.
    streaks = {
        index: 0 if events is None or not events else _streak_before(run, rules[index], events[0], holds, index)
        for index, rule in enumerate(rules)
        if rule.sustained > 1
    }
    for event in run.events if events is None else events:
        candidates = waiting.get(event.kind)
        if not candidates:
            continue
        own = scope.own_names(event)
        for index in candidates:
            rule = rules[index]
            try:
                fired = conditions[index](own)
            except Exception:  # a broken rule must not sink the analysis
                log.exception("rule %s failed on line %d", rule.code, event.line)
                retire(index)
                continue
            if index in streaks:
                streaks[index] = streaks[index] + 1 if fired else 0
                fired = streaks[index] >= rule.sustained
            if fired:  # only now the arithmetic its texts and flags read (thefuck's match, then get_new_command)
                derived = arithmetic({**scope.names, **own})
                found[index] = Match(rule=rule, event=event, context=scope.whole(own, derived))
                retire(index)
    return without_superseded([found[index] for index in sorted(found)])


def _streak_before(run: Run, rule: Rule, first: Event, holds: Callable[[int, Event], Any], index: int) -> int:
    """How many of the rule's events in a row just before `first` satisfy it (at most sustained - 1)."""
    streak = 0
    for event in reversed(run.events):
        if event.line >= first.line or event.kind not in rule.event:
            continue
        if streak == rule.sustained - 1 or not holds(index, event):
            break
        streak += 1
    return streak


def without_superseded(matches: list[Match]) -> list[Match]:
    codes = {m.rule.code for m in matches}
    kept = [m for m in matches if not set(m.rule.overridden_by) & codes]
    explained = any(not m.rule.fallback and m.rule.severity != "info" for m in kept)
    kept = [m for m in kept if not (m.rule.fallback and explained)]
    return sorted(kept, key=lambda m: (SEVERITY_ORDER[m.rule.severity], m.rule.fallback, m.event.line))
