"""Every catalogued wording of every vLLM release is read by the grammar, or ignored with a reason."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT

from advisor.parse.facts import number
from advisor.parse.grammar import parse_line

sys.path.insert(0, str(ROOT / "tools" / "wordings"))
import catalogue
import curation
import samples
from reading import GENERIC

ENTRIES = catalogue.read()
RECOGNISED = [entry for entry in ENTRIES if "kind" in entry]


def test_the_catalogue_spans_every_release():
    firsts = {entry["first"] for entry in ENTRIES}
    lasts = {entry["last"] for entry in ENTRIES}
    assert "0.1.0" in firsts and "0.33.0" in lasts


def test_every_wording_is_curated():
    """No silent new wording: the grammar reads each, or curation.toml ignores it, and never both."""
    uncurated = [(entry["template"], entry.get("conflict")) for entry in ENTRIES if not curation.curated(entry)]
    assert uncurated == []


def test_every_verdict_is_the_grammar_s_today():
    """The catalogue locks the grammar's verdicts: a grammar or curation change that alters one shows here,
    and in the catalogue's diff once rebuilt (python tools/wordings/extract.py --offline)."""
    today = curation.load()
    stale = [entry["template"] for entry in ENTRIES if curation.curate(curation.bare(entry), today) != entry]
    assert stale == [], f"stale verdict: {stale}"


@pytest.mark.parametrize("entry", RECOGNISED, ids=[f"{e['kind']}-{e['first']}-{i}" for i, e in enumerate(RECOGNISED)])
def test_wording_is_recognised(entry):
    for fact in [entry, *entry.get("also", [])]:
        values = {name: number(text) for name, text in samples.expected(entry, fact.get("values", {})).items()}
        for line in samples.lines(entry):
            read = [read.values for read in parse_line(line, 1) if read.kind == fact["kind"]]
            assert read, f"no {fact['kind']} in: {line}"
            assert any(found.items() >= values.items() for found in read), line


IGNORED = [entry for entry in ENTRIES if "ignored" in entry]


@pytest.mark.parametrize("entry", IGNORED, ids=[f"{e['family']}-{e['first']}-{i}" for i, e in enumerate(IGNORED)])
def test_an_ignored_wording_is_no_fact_of_the_grammar(entry):
    """The curation and the grammar agree: a wording the advisor may ignore is not read as a fact by any
    grammar alternative (else the curation is stale, or the grammar reads more than it should)."""
    for line in samples.lines(entry):
        read = [fact.kind for fact in parse_line(line, 1) if fact.kind not in GENERIC]
        assert not read, f"{read} in: {line}"


def test_readme_table_is_the_catalogue_s():
    page = (ROOT / "docs" / "coverage.md").read_text()
    assert catalogue.coverage_table(ENTRIES) in page
