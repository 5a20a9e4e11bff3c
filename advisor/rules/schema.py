"""Rule files: TOML validated on load into rules, each with its remediations.

The types are plain dataclasses; pydantic validates a file against them where no validated copy of
the same files is kept in the cache (advisor.caching), so a run that finds one imports no validator.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from advisor import caching
from advisor.parse.parsers import data_dir
from advisor.rules.condition import names_read
from advisor.rules.expressions import ExpressionError, compile_expression
from advisor.rules.remedies import DERIVED_NAMES

T = TypeVar("T")
# What pydantic reads off a dataclass it validates: a key the type does not name is an error.
STRICT_KEYS: dict[str, Any] = {"extra": "forbid"}


class RuleSetError(ValueError):
    """The rule files are invalid: a bad key, a bad expression, a duplicate code."""


@dataclass(frozen=True, kw_only=True)
class Failure:
    """A word of the failure vocabulary (rules/vocabulary/failures.toml)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = STRICT_KEYS
    phase: Literal["startup", "runtime"]
    means: str
    clears: bool = False  # a state that can end while serving (follow reports its recovery)

    def __post_init__(self) -> None:
        _filled(means=self.means)


VOCABULARY_FILE = data_dir("rules") / "vocabulary" / "failures.toml"
# What validates a rule file: a validated copy kept in the cache is good while these are the same.
RULES_CODE = sorted(Path(__file__).parent.glob("*.py"))


def load_failures() -> dict[str, Failure]:
    """The failure vocabulary, in the file's order: start-up words, then runtime words."""
    path = VOCABULARY_FILE

    def validated() -> dict[str, Failure]:
        import tomllib  # here, as pydantic: only where no validated copy is kept

        try:
            entries = tomllib.loads(path.read_text(encoding="utf-8"))
            return {word: _validate(Failure, entry) for word, entry in entries.items()}
        except ValueError as error:  # a TOML error too
            raise RuleSetError(f"{path.name}: {error}") from None

    return caching.kept("rules", caching.file_parts([*RULES_CODE, path]), validated)


@dataclass(kw_only=True)
class Remediation:
    """One ranked fix: flag changes whose values are expressions over facts and arithmetic."""

    __pydantic_config__: ClassVar[dict[str, Any]] = STRICT_KEYS
    title: str
    flags: dict[str, str] = field(default_factory=dict)
    when: str = "True"
    why: list[str]
    tradeoff: str

    def __post_init__(self) -> None:
        _checked(self.when)
        for flag, expression in self.flags.items():
            if not flag.startswith("--"):
                raise ValueError(f"flag {flag!r} must start with --")
            _checked(expression)


@dataclass(kw_only=True)
class Case:
    """A real log the rule must fire on, or a near miss it must stay quiet on (run by tests/unit/test_rules.py)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = STRICT_KEYS
    log: str  # a fixture: its file name, or the start of it ("088-")
    fires: bool
    note: str = ""


@dataclass(kw_only=True)
class MetricCase:
    """A real /metrics dump of fixtures/live the rule must fire on, or a near miss, edited in memory as
    little as the rule needs (rules/metrics/README.md; run by tests/unit/test_scrape_rules.py)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = STRICT_KEYS
    fires: bool
    dumps: list[str]  # one per replica, under fixtures/
    set: dict[str, int | float] = field(default_factory=dict)  # "SAMPLE{label=value}" = its new value
    set_on: int | None = None  # the one dump `set` edits (default: every one)
    observe: dict[str, list[tuple[float, int]]] = field(default_factory=dict)  # histogram = [[value, count]]
    previous: str | None = None  # an earlier poll of the same server (follow's comparison) ...
    previous_set: dict[str, int | float] = field(default_factory=dict)
    seconds: float | None = None  # ... this long before

    def __post_init__(self) -> None:
        if not self.dumps:
            raise ValueError("dumps must name at least one dump")


@dataclass(kw_only=True)
class Documented:
    """What a rule's page and `explain` say: what it detects, why it matters, the fix and its trade-offs."""

    detects: str
    why: str
    fix: str
    tradeoffs: str

    def __post_init__(self) -> None:
        _filled(detects=self.detects, why=self.why, fix=self.fix, tradeoffs=self.tradeoffs)

    @property
    def explanation(self) -> str:
        labels = ("What it detects", "Why", "Fix", "Trade-offs")
        sections = zip(labels, (self.detects, self.why, self.fix, self.tradeoffs), strict=True)
        return "\n\n".join(f"{label}: {text.strip()}" for label, text in sections)


@dataclass(kw_only=True)
class Judged(Documented):
    """What every rule file holds, a log rule's or a metric rule's: what it is, when it holds, what it
    says and what it changes."""

    __pydantic_config__: ClassVar[dict[str, Any]] = STRICT_KEYS
    CODE: ClassVar[re.Pattern[str]]  # each kind of rule its own letters (below)
    code: str
    name: str
    phase: Literal["startup", "runtime", "healthy"]
    severity: Literal["error", "warning", "info"]
    failure: str  # one of FAILURES, the corpus's words
    when: str = "True"
    message: list[str]
    remediations: list[Remediation] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.CODE.fullmatch(self.code):
            raise ValueError(f"code {self.code!r} must match {self.CODE.pattern}")
        if not NAME.fullmatch(self.name):
            raise ValueError(f"name {self.name!r} must be kebab-case ({NAME.pattern})")
        if self.failure not in FAILURES:
            raise ValueError(f"failure {self.failure!r} is none of {', '.join(sorted(FAILURES))}")
        _checked(self.when)


NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@dataclass(kw_only=True)
class Rule(Judged):
    """A log rule: what it detects, when, what to say and what to change, and the logs that show it."""

    CODE: ClassVar[re.Pattern[str]] = re.compile(r"[SRH][12]\d\d")
    event: list[str]
    versions: str
    references: list[str] = field(default_factory=list)
    fallback: bool = False  # only when no other error or warning explains the run
    overridden_by: list[str] = field(default_factory=list)
    remediations_from: str | None = None  # share another rule's ranked remediations
    # An inference from periodic lines is a failure only when it lasts: `when` must hold on this many
    # of the rule's events in a row (stats lines: that many in a row), and the rule fires on the last.
    sustained: int = 1
    # How the finding knows: a line of the log says it, or it is worked out from what the lines show.
    evidence: Literal["logged", "inferred"] = "logged"
    cases: list[Case] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 1 <= self.sustained <= 10:
            raise ValueError(f"sustained {self.sustained} must be from 1 to 10")
        derived = sorted(set(names_read(self.when)) & DERIVED_NAMES)
        if derived:
            raise ValueError(
                f"when reads {', '.join(derived)}, which are derived only once the rule fires: "
                "use them in the message, flags or a remediation's when"
            )


@dataclass(kw_only=True)
class MetricRule(Judged):
    """A metric rule (rules/metrics/): judged over a replica's /metrics figures (or the deployment's)."""

    CODE: ClassVar[re.Pattern[str]] = re.compile(r"M1\d\d")
    phase: Literal["runtime", "healthy"]
    when: str
    scope: Literal["replica", "deployment"] = "replica"  # one replica's figures, or all of them at once
    bottleneck: str  # what the summary calls it when this rule is the top finding
    reads: list[str]  # the metrics it reads, for `explain` and the rule pages
    cases: list[MetricCase] = field(default_factory=list)


def _filled(**texts: str) -> None:
    for name, text in texts.items():
        if not text:
            raise ValueError(f"{name} must not be empty")


def _checked(expression: str) -> str:
    try:
        compile_expression(expression)
    except ExpressionError as error:
        raise ValueError(str(error)) from None
    return expression


def _validate(kind: type[T], data: Any) -> T:
    """A TOML table validated into its type (pydantic: the types of every key, nested, and no other key)."""
    from pydantic import TypeAdapter  # here: only where no validated copy is kept

    return TypeAdapter(kind).validate_python(data)


# Validated here, below the helpers that validating calls.
VOCABULARY = load_failures()
STARTUP_FAILURES = tuple(word for word, failure in VOCABULARY.items() if failure.phase == "startup")
RUNTIME_FAILURES = tuple(word for word, failure in VOCABULARY.items() if failure.phase == "runtime")
CLEARING_FAILURES = frozenset(word for word, failure in VOCABULARY.items() if failure.clears)
FAILURES = frozenset((*VOCABULARY, "none"))
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


R = TypeVar("R", bound=Judged)


@cache
def load_rules(folder: Path | None = None) -> tuple[Rule, ...]:
    """The log rules (rules/*.toml), each other rule's remediations shared where one names them."""
    folder = folder or data_dir("rules")
    return _kept(folder, lambda: _with_shared_remediations(_loaded(folder, Rule)))


def _with_shared_remediations(rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
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
    folder = folder or data_dir("rules") / "metrics"
    return _kept(folder, lambda: _loaded(folder, MetricRule))


def _kept(folder: Path, validated: Callable[[], T]) -> T:
    """A folder's rules validated once, then kept while its files, the vocabulary and the rules' code stay."""
    return caching.kept(
        "rules", caching.file_parts([*RULES_CODE, *sorted(folder.glob("*.toml")), VOCABULARY_FILE]), validated
    )


def _loaded(folder: Path, kind: type[R]) -> tuple[R, ...]:
    """The rule files of a folder, validated: each named CODE-name.toml, each code once."""
    import tomllib

    rules: list[R] = []
    seen: dict[str, str] = {}
    where = "" if kind is Rule else f"{folder.name}/"
    for path in sorted(folder.glob("*.toml")):
        try:
            rule = _validate(kind, tomllib.loads(path.read_text(encoding="utf-8")))
        except ValueError as error:  # a TOML error too
            raise RuleSetError(f"{where}{path.name}: {error}") from None
        code = rule.code
        if code in seen:
            raise RuleSetError(f"{where}{path.name}: code {code} already used by {seen[code]}")
        if path.stem != f"{code}-{rule.name}":
            raise RuleSetError(f"{where}{path.name}: file must be named {code}-{rule.name}.toml")
        seen[code] = path.name
        rules.append(rule)
    return tuple(rules)
