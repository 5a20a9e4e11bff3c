"""Rule files: TOML validated on load into rules, each with its remediations."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from advisor.parse.parsers import data_dir
from advisor.rules.expressions import ExpressionError, compile_expression
from advisor.rules.remedies import DERIVED_NAMES
from advisor.rules.remembered import names_read


class RuleSetError(ValueError):
    """The rule files are invalid: a bad key, a bad expression, a duplicate code."""


class Failure(BaseModel):
    """A word of the failure vocabulary (rules/vocabulary/failures.toml)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    phase: Literal["startup", "runtime"]
    means: str = Field(min_length=1)
    clears: bool = False  # a state that can end while serving (follow reports its recovery)


def load_failures() -> dict[str, Failure]:
    """The failure vocabulary, in the file's order: start-up words, then runtime words."""
    path = data_dir("rules") / "vocabulary" / "failures.toml"
    try:
        return {word: Failure.model_validate(entry) for word, entry in tomllib.loads(path.read_text("utf-8")).items()}
    except (ValueError, tomllib.TOMLDecodeError) as error:
        raise RuleSetError(f"{path.name}: {error}") from None


VOCABULARY = load_failures()
STARTUP_FAILURES = tuple(word for word, failure in VOCABULARY.items() if failure.phase == "startup")
RUNTIME_FAILURES = tuple(word for word, failure in VOCABULARY.items() if failure.phase == "runtime")
CLEARING_FAILURES = frozenset(word for word, failure in VOCABULARY.items() if failure.clears)
FAILURES = frozenset((*VOCABULARY, "none"))
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


class Case(BaseModel):
    """A real log the rule must fire on, or a near miss it must stay quiet on (run by tests/unit/test_rules.py)."""

    model_config = ConfigDict(extra="forbid")
    log: str  # a fixture: its file name, or the start of it ("088-")
    fires: bool
    note: str = ""


class MetricCase(BaseModel):
    """A real /metrics dump of fixtures/live the rule must fire on, or a near miss, edited in memory as
    little as the rule needs (rules/metrics/README.md; run by tests/unit/test_scrape_rules.py)."""

    model_config = ConfigDict(extra="forbid")
    fires: bool
    dumps: list[str] = Field(min_length=1)  # one per replica, under fixtures/
    set: dict[str, int | float] = Field(default_factory=dict)  # "SAMPLE{label=value}" = its new value
    set_on: int | None = None  # the one dump `set` edits (default: every one)
    observe: dict[str, list[tuple[float, int]]] = Field(default_factory=dict)  # histogram = [[value, count]]
    previous: str | None = None  # an earlier poll of the same server (follow's comparison) ...
    previous_set: dict[str, int | float] = Field(default_factory=dict)
    seconds: float | None = None  # ... this long before


class Documented(BaseModel):
    """What a rule's page and `explain` say: what it detects, why it matters, the fix and its trade-offs."""

    detects: str = Field(min_length=1)
    why: str = Field(min_length=1)
    fix: str = Field(min_length=1)
    tradeoffs: str = Field(min_length=1)

    @property
    def explanation(self) -> str:
        labels = ("What it detects", "Why", "Fix", "Trade-offs")
        sections = zip(labels, (self.detects, self.why, self.fix, self.tradeoffs), strict=True)
        return "\n\n".join(f"{label}: {text.strip()}" for label, text in sections)


class Judged(Documented):
    """What every rule file holds, a log rule's or a metric rule's: what it is, when it holds, what it
    says and what it changes."""

    model_config = ConfigDict(extra="forbid")
    code: str  # each kind of rule its own letters (below)
    name: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    phase: str
    severity: Literal["error", "warning", "info"]
    failure: str  # one of FAILURES, the corpus's words
    when: str = "True"
    message: list[str]
    remediations: list[Remediation] = Field(default_factory=list)

    @field_validator("failure")
    @classmethod
    def _known_failure(cls, value: str) -> str:
        if value not in FAILURES:
            raise ValueError(f"failure {value!r} is none of {', '.join(sorted(FAILURES))}")
        return value

    @field_validator("when")
    @classmethod
    def _valid_when(cls, value: str) -> str:
        return _checked(value)


class Rule(Judged):
    """A log rule: what it detects, when, what to say and what to change, and the logs that show it."""

    code: str = Field(pattern=r"^[SRH][12]\d\d$")
    phase: Literal["startup", "runtime", "healthy"]
    event: list[str]
    versions: str
    references: list[str] = Field(default_factory=list)
    fallback: bool = False  # only when no other error or warning explains the run
    overridden_by: list[str] = Field(default_factory=list)
    remediations_from: str | None = None  # share another rule's ranked remediations
    # An inference from periodic lines is a failure only when it lasts: `when` must hold on this many
    # of the rule's events in a row (stats lines: that many in a row), and the rule fires on the last.
    sustained: int = Field(1, ge=1, le=10)
    # How the finding knows: a line of the log says it, or it is worked out from what the lines show.
    evidence: Literal["logged", "inferred"] = "logged"
    cases: list[Case] = Field(default_factory=list)

    @field_validator("when")
    @classmethod
    def _when_reads_no_arithmetic(cls, value: str) -> str:
        derived = sorted(set(names_read(_checked(value))) & DERIVED_NAMES)
        if derived:
            raise ValueError(
                f"when reads {', '.join(derived)}, which are derived only once the rule fires: "
                "use them in the message, flags or a remediation's when"
            )
        return value


class MetricRule(Judged):
    """A metric rule (rules/metrics/): judged over a replica's /metrics figures (or the deployment's)."""

    code: str = Field(pattern=r"^M1\d\d$")
    phase: Literal["runtime", "healthy"]
    when: str
    scope: Literal["replica", "deployment"] = "replica"  # one replica's figures, or all of them at once
    bottleneck: str  # what the summary calls it when this rule is the top finding
    reads: list[str]  # the metrics it reads, for `explain` and the rule pages
    cases: list[MetricCase] = Field(default_factory=list)


def _checked(expression: str) -> str:
    try:
        compile_expression(expression)
    except ExpressionError as error:
        raise ValueError(str(error)) from None
    return expression


R = TypeVar("R", bound=Judged)


@cache
def load_rules(folder: Path | None = None) -> tuple[Rule, ...]:
    """The log rules (rules/*.toml), each other rule's remediations shared where one names them."""
    rules = _loaded(folder or data_dir("rules"), Rule)
    by_code = {rule.code: rule for rule in rules}
    for rule in rules:
        if rule.remediations_from:
            if rule.remediations_from not in by_code or rule.remediations:
                raise RuleSetError(f"{rule.code}: remediations_from must name another rule and stand alone")
            rule.remediations = by_code[rule.remediations_from].remediations
    return rules


@cache
def load_metric_rules(folder: Path | None = None) -> tuple[MetricRule, ...]:
    """The metric rules (rules/metrics/*.toml)."""
    return _loaded(folder or data_dir("rules") / "metrics", MetricRule)


def _loaded(folder: Path, kind: type[R]) -> tuple[R, ...]:
    """The rule files of a folder, validated: each named CODE-name.toml, each code once."""
    rules: list[R] = []
    seen: dict[str, str] = {}
    where = "" if kind is Rule else f"{folder.name}/"
    for path in sorted(folder.glob("*.toml")):
        try:
            rule = kind.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
        except (ValueError, tomllib.TOMLDecodeError) as error:
            raise RuleSetError(f"{where}{path.name}: {error}") from None
        code = rule.code
        if code in seen:
            raise RuleSetError(f"{where}{path.name}: code {code} already used by {seen[code]}")
        if path.stem != f"{code}-{rule.name}":
            raise RuleSetError(f"{where}{path.name}: file must be named {code}-{rule.name}.toml")
        seen[code] = path.name
        rules.append(rule)
    return tuple(rules)
