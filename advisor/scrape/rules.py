"""Metric rules: rules/metrics/*.toml validated on load, judged over a replica's figures (or the deployment's)."""

from __future__ import annotations

import logging
import tomllib
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator

from advisor.parse.grammar import data_dir
from advisor.report.build import ranked_remediations
from advisor.report.contract import Finding
from advisor.rules.expressions import ExpressionError, compile_expression, evaluate
from advisor.rules.render import render
from advisor.rules.schema import Documented, Failure, Remediation, RuleSetError

log = logging.getLogger(__name__)


class MetricRule(Documented):
    """A metric rule file: the log rules' fields, less the events, plus what it reads and names as bottleneck."""

    model_config = ConfigDict(extra="forbid")
    code: str = Field(pattern=r"^M1\d\d$")
    name: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    phase: Literal["runtime", "healthy"]
    severity: Literal["error", "warning", "info"]
    failure: Failure  # type: ignore[valid-type]  # Failure is built from tuples (advisor.rules.schema)
    scope: Literal["replica", "deployment"] = "replica"  # one replica's figures, or all of them at once
    bottleneck: str  # what the summary calls it when this rule is the top finding
    reads: list[str]  # the metrics it reads, for `explain` and the README
    when: str
    message: list[str]
    remediations: list[Remediation] = Field(default_factory=list)

    @field_validator("when")
    @classmethod
    def _valid_when(cls, value: str) -> str:
        try:
            compile_expression(value)
        except ExpressionError as error:
            raise ValueError(str(error)) from None
        return value


@cache
def load_metric_rules(folder: Path | None = None) -> tuple[MetricRule, ...]:
    folder = folder or data_dir("rules") / "metrics"
    rules: list[MetricRule] = []
    for path in sorted(folder.glob("*.toml")):
        try:
            rule = MetricRule.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
        except (ValueError, tomllib.TOMLDecodeError) as error:
            raise RuleSetError(f"metrics/{path.name}: {error}") from None
        if path.stem != f"{rule.code}-{rule.name}":
            raise RuleSetError(f"metrics/{path.name}: file must be named {rule.code}-{rule.name}.toml")
        rules.append(rule)
    return tuple(rules)


def judge(context: dict[str, Any], scope: str, source: str | None = None) -> list[tuple[MetricRule, Finding]]:
    """The rules of one scope that hold on these figures, as findings (`source` names the replica)."""
    out = []
    for rule in load_metric_rules():
        if rule.scope != scope:
            continue
        try:
            fired = bool(evaluate(rule.when, context))
        except Exception:  # a broken rule must not sink the analysis
            log.exception("metric rule %s failed", rule.code)
            continue
        if fired:
            out.append((rule, finding(rule, context, source)))
    return out


def finding(rule: MetricRule, context: dict[str, Any], source: str | None) -> Finding:
    remediations = ranked_remediations(rule.remediations, context)
    message = render(rule.message, context)
    return Finding(
        rule=rule.code,
        name=rule.name,
        phase=rule.phase,
        severity=rule.severity,
        failure=rule.failure,
        evidence="metrics",
        line=None,
        message=f"{source}: {message}" if source else message,
        remediations=remediations,
    )
