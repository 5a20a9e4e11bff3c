"""Every labelled real log: the verdict matches its label, its facts are found, the report is stable."""
from __future__ import annotations

import math

import pytest

from conftest import CORPUS, analyze_fixture, corpus_cases

CASES = corpus_cases()
# Cases the advisor still gets wrong, each with what it says: strict, so a fix must remove its line.
KNOWN_WRONG = {
    "016": "'# GPU blocks: 0' with the ValueError cut off is called healthy",
    "018": "a negative 'Available KV cache memory' before the failure: 'cause not shown'",
    "025": "the free-memory ValueError hard-wrapped at 80 columns is not recognised",
    "034": "a traceback through run_busy_loop after serving is called a startup weights OOM",
    "061": "one v0.3 stats snapshot (2 running, 3 pending, 82%) is called preemption",
    "073": "'derived max_model_len (None=2048 ...)' is not recognised",
    "076": "a compressed-tensors RuntimeError built from a tuple of fragments is not recognised",
    "078": "Triton fp8e4nv in a w8a8 block-scaled matmul (fp8 weights) is taken for an fp8 KV cache",
    "080": "an fp8 checkpoint's kv-cache scheme against fp8_e5m2, split over two lines, is not recognised",
    "087": "'Engine process failed to start' then systemd status=1/FAILURE is called healthy",
    "090": "one stats snapshot of a healthy server (7 running, 1 waiting, 95%) is called preemption",
    "096": "an HTTP 400 whose reason is not in the log, then SIGTERM, is called a failure",
}
# Cases whose labelled numbers are not all found yet.
KNOWN_MISSING_FACTS = {key: KNOWN_WRONG[key] for key in ("025", "073")}


def known(cases: list[dict], wrong: dict[str, str]) -> list:
    return [pytest.param(c, id=c["id"], marks=pytest.mark.xfail(reason=wrong[c["id"]], strict=True))
            if c["id"] in wrong else pytest.param(c, id=c["id"]) for c in cases]


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
