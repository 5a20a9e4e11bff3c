"""Every labelled real log: the verdict matches its label, its facts are found, the report is stable."""
from __future__ import annotations

import math

import pytest

from conftest import CORPUS, analyze_fixture, corpus_cases

CASES = corpus_cases()
# Live captures (097 on) whose verdict the advisor got wrong at first sight, id -> why; and those
# where it missed a labelled fact. Strict: a fix that makes one pass must take it off its list.
# A wrong verdict has no golden report until it is fixed.
KNOWN_WRONG: dict[str, str] = {
    "108": "said startup/max_len_exceeds_model from the VLLM_ALLOW_LONG_MAX_MODEL_LEN warning (line 13); the failure is "
           "the KV ValueError at line 58 ('2.0 GiB KV cache is needed ... available KV cache memory (1.0 GiB)')",
}
FACTS_NOT_FOUND: dict[str, str] = {}


def params(known: dict[str, str], mark=pytest.mark.xfail):
    def marks(cid):
        if cid not in known:
            return ()
        return mark(strict=True, reason=known[cid]) if mark is pytest.mark.xfail else mark(reason=known[cid])
    return [pytest.param(c, id=c["id"], marks=marks(c["id"])) for c in CASES]


@pytest.mark.parametrize("case", params(KNOWN_WRONG))
def test_verdict_matches_label(case):
    report = analyze_fixture(case["file"].split("/")[-1].removesuffix(".log"))
    assert report.verdict.phase == case["phase"], report.verdict
    assert report.verdict.failure in case["accept"], report.verdict


@pytest.mark.parametrize("case", params(FACTS_NOT_FOUND))
def test_labelled_facts_are_reported(case):
    report = analyze_fixture(case["file"].split("/")[-1].removesuffix(".log"))
    for name, value in case["facts"].items():
        seen = [e.values[name] for e in report.events if name in e.values]
        assert any(math.isclose(v, value, rel_tol=1e-9) for v in seen), f"{name}={value}, seen {seen}"


@pytest.mark.parametrize("case", params(KNOWN_WRONG, pytest.mark.skip))
def test_golden_report(case, file_regression):
    report = analyze_fixture(case["file"].split("/")[-1].removesuffix(".log"))
    file_regression.check(report.to_json() + "\n", extension=".json", basename=f"report_{case['id']}")


def test_every_corpus_log_is_labelled():
    labelled = {c["file"].split("/")[-1] for c in CASES}
    assert labelled == {p.name for p in CORPUS.glob("*.log")}
