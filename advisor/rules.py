"""Rules: TOML files validated on load, evaluated over each run's events into findings."""
from __future__ import annotations

import logging
import math
import string
import tomllib
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .expressions import ExpressionError, compile_expression, evaluate
from .grammar import data_dir
from .remedies import arithmetic
from .remembered import RememberedArithmetic, RememberedCondition
from .facts import Fact
from .messages import STATE_NAMES
from .timeline import Event, Run

log = logging.getLogger(__name__)

STARTUP_FAILURES = ("kv_cache_insufficient", "no_cache_blocks", "free_memory_below_utilization", "weights_oom",
                    "cuda_graph_oom", "tp_heads_mismatch", "max_len_exceeds_model", "unsupported_quantization",
                    "unsupported_kv_dtype", "unsupported_architecture", "nccl_error", "port_in_use", "parallel_size_exceeds_devices",
                    "engine_startup_failed")
RUNTIME_FAILURES = ("cuda_oom_runtime", "preemption", "kv_cache_saturated", "swap_space_exhausted",
                    "request_exceeds_max_model_len", "engine_dead")
Failure = Literal[STARTUP_FAILURES + RUNTIME_FAILURES + ("none",)]
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


class Remediation(BaseModel):
    """One ranked fix: flag changes whose values are expressions over facts and arithmetic."""

    model_config = ConfigDict(extra="forbid")
    title: str
    flags: dict[str, str] = Field(default_factory=dict)
    when: str = "True"
    why: list[str]
    tradeoff: str

    @field_validator("when")
    @classmethod
    def _valid_when(cls, value: str) -> str:
        return _checked(value)

    @field_validator("flags")
    @classmethod
    def _valid_flags(cls, value: dict[str, str]) -> dict[str, str]:
        for flag, expression in value.items():
            if not flag.startswith("--"):
                raise ValueError(f"flag {flag!r} must start with --")
            _checked(expression)
        return value


class Rule(BaseModel):
    """A rule file: what it detects, when, what to say and what to change."""

    model_config = ConfigDict(extra="forbid")
    code: str = Field(pattern=r"^[SRH][12]\d\d$")
    name: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    phase: Literal["startup", "runtime", "healthy"]
    severity: Literal["error", "warning", "info"]
    failure: Failure
    event: list[str]
    when: str = "True"
    message: list[str]
    remediations: list[Remediation] = Field(default_factory=list)
    versions: str
    references: list[str] = Field(default_factory=list)
    explanation: str
    fallback: bool = False  # only when no other error or warning explains the run
    overridden_by: list[str] = Field(default_factory=list)
    remediations_from: str | None = None  # share another rule's ranked remediations
    # An inference from periodic lines is a failure only when it lasts: `when` must hold on this many
    # of the rule's events in a row (stats lines: that many in a row), and the rule fires on the last.
    sustained: int = Field(1, ge=1, le=10)
    # How the finding knows: a line of the log says it, or it is worked out from what the lines show.
    evidence: Literal["logged", "inferred"] = "logged"

    @field_validator("when")
    @classmethod
    def _valid_when(cls, value: str) -> str:
        return _checked(value)


def _checked(expression: str) -> str:
    try:
        compile_expression(expression)
    except ExpressionError as error:
        raise ValueError(str(error)) from None
    return expression


class RuleSetError(ValueError):
    """The rule files are invalid: a bad key, a bad expression, a duplicate code."""


@cache
def load_rules(folder: Path | None = None) -> tuple[Rule, ...]:
    folder = folder or data_dir("rules")
    rules, seen = [], {}
    for path in sorted(folder.glob("*.toml")):
        try:
            rule = Rule.model_validate(tomllib.loads(path.read_text()))
        except (ValueError, tomllib.TOMLDecodeError) as error:
            raise RuleSetError(f"{path.name}: {error}") from None
        if rule.code in seen:
            raise RuleSetError(f"{path.name}: code {rule.code} already used by {seen[rule.code]}")
        if path.stem != f"{rule.code}-{rule.name}":
            raise RuleSetError(f"{path.name}: file must be named {rule.code}-{rule.name}.toml")
        seen[rule.code] = path.name
        rules.append(rule)
    by_code = {rule.code: rule for rule in rules}
    for rule in rules:
        if rule.remediations_from:
            if rule.remediations_from not in by_code or rule.remediations:
                raise RuleSetError(f"{rule.code}: remediations_from must name another rule and stand alone")
            rule.remediations = by_code[rule.remediations_from].remediations
    return tuple(rules)


class Match(BaseModel):
    """A rule that fired on an event, with the context its texts and flags are filled from."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    rule: Rule
    event: Event
    context: dict[str, Any]


# Names of the whole run that an event's own values and words do not override.
RUN_WIDE = ("kinds", "vllm_version", "became_ready", "backend")


class RunContext:
    """What the contexts of a run's events take from the whole run, computed once per run (per event
    it made matching quadratic in the length of the run, a day of stats lines).

    A context is made of three layers: the run's names, the event's own names over them, and the
    arithmetic derived from both over all. Within a run only the event's own names (and so the
    arithmetic) differ: an event costs a dict of its own names, the whole context is made only
    where it is read in full.
    """

    def __init__(self, run: Run):
        self.names: dict[str, Any] = {f"arg_{k}": v for k, v in run.launch_args().items()
                                      if isinstance(v, (int, float, str))}
        # A state the stats lines report changes from line to line: an event sees only its own, never
        # a later line's (batch would then judge an earlier line by what a stream had not yet read).
        self.names.update({name: value for name, value in run.values.items() if name not in STATE_NAMES})
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
        self.names["became_ready"] = run.ready_line is not None
        self.names["backend"] = run.backend

    def own_names(self, event: Event) -> dict[str, Any]:
        """The event's own names: its values, their changes and its words, its kind, level, phase, stage
        and frames, the exception it states, the root cause and shutdown it comes after, and whether
        it ends the run (at_end: no sign of startup progress or serving follows it)."""
        fact = event.fact
        line, text = fact.line, fact.text
        names = fact.values_copy()
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
        names["exception"] = text.get("type", "")
        names["root_cause"] = self.root_cause if line >= self.root_cause_from else None
        names["shutting_down"] = line >= self.shutdown_from
        names["at_end"] = line > self.progress_until  # nothing after it shows vLLM going on
        for name in RUN_WIDE:
            names.pop(name, None)
        return names

    def whole(self, own: dict[str, Any], derived: dict[str, Any]) -> dict[str, Any]:
        """The context a rule reads and its texts are filled from: the three layers, the upper ones winning."""
        return {**self.names, **own, **derived}


def context_for(run: Run, event: Event) -> dict[str, Any]:
    """Names a rule may use on an event: the run's launch arguments (arg_*), last values, peak running
    requests, kinds and version, the event's own names, and the arithmetic derived from them all."""
    scope = RunContext(run)
    own = scope.own_names(event)
    return scope.whole(own, arithmetic({**scope.names, **own}))


def match_run(run: Run, rules: tuple[Rule, ...], events: list[Event] | None = None) -> list[Match]:
    """Each rule fires at most once per run, on the first event (of `events`, default all) that satisfies it.

    Events are walked once: an event's own names are gathered only when a rule still waiting for
    its kind is left, and shared by those rules. The conditions and the arithmetic remember their
    outcomes by the own names they read, so on a day of stats lines the whole context is made only
    for the few events with new values and for those a rule fires on.
    """
    scope = RunContext(run)
    waiting: dict[str, list[int]] = {}  # kind -> indexes of the rules still waiting for it, in rule order
    for index, rule in enumerate(rules):
        for kind in dict.fromkeys(rule.event):
            waiting.setdefault(kind, []).append(index)

    def retire(index: int) -> None:  # new lists: the event being judged keeps its own
        for kind in dict.fromkeys(rules[index].event):
            waiting[kind] = [other for other in waiting[kind] if other != index]

    found: dict[int, Match] = {}
    derive = RememberedArithmetic(scope.names)
    conditions = [RememberedCondition(rule.when, scope.names) for rule in rules]

    def holds(index: int, event: Event) -> Any:
        own = scope.own_names(event)
        try:
            return conditions[index](own, derive(own), derive.key)
        except Exception:  # judged again, and logged, in the walk below
            return False

    # A sustained rule judged on a run's later events only (the stream) counts the streak before them.
    streaks = {index: 0 if events is None or not events else _streak_before(run, rules[index], events[0], holds, index)
               for index, rule in enumerate(rules) if rule.sustained > 1}
    for event in run.events if events is None else events:
        candidates = waiting.get(event.kind)
        if not candidates:
            continue
        own = scope.own_names(event)
        derived = derive(own)
        for index in candidates:
            rule = rules[index]
            try:
                fired = conditions[index](own, derived, derive.key)
            except Exception:  # a broken rule must not sink the analysis
                log.exception("rule %s failed on line %d", rule.code, event.line)
                retire(index)
                continue
            if index in streaks:
                streaks[index] = streaks[index] + 1 if fired else 0
                fired = streaks[index] >= rule.sustained
            if fired:
                found[index] = Match(rule=rule, event=event, context=scope.whole(own, derived))
                retire(index)
    return without_superseded([found[index] for index in sorted(found)])


def _streak_before(run: Run, rule: Rule, first: Event, holds, index: int) -> int:
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


class _Template(string.Formatter):
    def format_field(self, value: Any, spec: str) -> str:
        if isinstance(value, float) and not spec:
            return _short(value)
        return super().format_field(value, spec)


def render(sentences: list[str] | str, context: dict[str, Any]) -> str:
    """Join the sentences whose every placeholder is known; skip the others."""
    formatter, out = _Template(), []
    for sentence in [sentences] if isinstance(sentences, str) else sentences:
        fields = [name for _, name, _, _ in formatter.parse(sentence) if name]
        if all(context.get(name) is not None for name in fields):
            out.append(formatter.format(sentence, **context))
    return " ".join(out)


def flag_values(remediation: Remediation, context: dict[str, Any]) -> dict[str, str | None] | None:
    """Evaluate a remediation's flags; None when it does not apply or a value cannot be computed."""
    if not evaluate(remediation.when, context):
        return None
    flags: dict[str, str | None] = {}
    for flag, expression in remediation.flags.items():
        if expression.strip() == "None":  # the remediation removes this flag
            flags[flag] = None
            continue
        value = evaluate(expression, context)
        if value is None or value is False:
            return None
        flags[flag] = _as_flag(value)
    return flags


def _as_flag(value: Any) -> str | None:
    if value is True:
        return ""
    if isinstance(value, float):
        return _short(value)
    return str(value)


def _short(value: float) -> str:
    """0.9 -> '0.9', 0.0 -> '0.0', 1.23456 -> '1.2346': as printed, never a long tail."""
    text = f"{value:.4f}".rstrip("0")
    return text + "0" if text.endswith(".") else text
