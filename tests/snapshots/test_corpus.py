"""Every labelled real log: the verdict matches its label, its facts are found, the report is stable."""

from __future__ import annotations

import math

import pytest
from conftest import CORPUS, analyze_fixture, corpus_cases

CASES = corpus_cases()
# Cases the advisor still gets wrong, each with what it says: strict, so a fix must remove its line.
KNOWN_WRONG: dict[str, str] = {}
# Cases whose labelled numbers are not all found yet.
KNOWN_MISSING_FACTS: dict[str, str] = {}


def known(cases: list[dict], wrong: dict[str, str]) -> list:
    return [
        pytest.param(c, id=c["id"], marks=pytest.mark.xfail(reason=wrong[c["id"]], strict=True))
        if c["id"] in wrong
        else pytest.param(c, id=c["id"])
        for c in cases
    ]


@pytest.mark.parametrize("case", known(CASES, KNOWN_WRONG))
def test_verdict_matches_label(case):
    report = analyze_fixture(case["file"].split("/")[-1].removesuffix(".log"))
    assert report.verdict.phase == case["phase"], report.verdict
    assert report.verdict.failure in case["accept"], report.verdict


@pytest.mark.parametrize("case", known(CASES, KNOWN_MISSING_FACTS))
def test_labelled_facts_are_reported(case):
    report = analyze_fixture(case["file"].split("/")[-1].removesuffix(".log"))
    for name, value in case["facts"].items():
        seen = [e.values[name] for e in report.events if name in e.values]
        assert any(math.isclose(v, value, rel_tol=1e-9) for v in seen), f"{name}={value}, seen {seen}"


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_golden_report(case, file_regression):
    if case["id"] in KNOWN_WRONG:  # a golden file records a right report; none is written for a wrong one
        pytest.skip(f"known wrong: {KNOWN_WRONG[case['id']]}")
    report = analyze_fixture(case["file"].split("/")[-1].removesuffix(".log"))
    file_regression.check(report.to_json() + "\n", extension=".json", basename=f"report_{case['id']}")


def test_every_corpus_log_is_labelled():
    labelled = {c["file"].split("/")[-1] for c in CASES}
    assert labelled == {p.name for p in CORPUS.glob("*.log")}
