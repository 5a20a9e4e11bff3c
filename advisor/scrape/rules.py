"""The metric rules' engine: rules/metrics/*.toml judged over a replica's figures (or the deployment's)."""

from __future__ import annotations

import logging
from typing import Any

from advisor.report.build import rule_finding
from advisor.report.contract import Finding
from advisor.rules.expressions import evaluate
from advisor.rules.schema import MetricRule, load_metric_rules

log = logging.getLogger(__name__)


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
            out.append((rule, rule_finding(rule, context, None, "metrics", source or "")))
    return out
