"""Every catalogued wording of every vLLM release is recognised as curated, or ignored with a reason."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT

from advisor.parse.facts import number
from advisor.parse.grammar import parse_line

sys.path.insert(0, str(ROOT / "tools" / "wordings"))
import catalogue
import samples

ENTRIES = catalogue.read()
RECOGNISED = [entry for entry in ENTRIES if "kind" in entry]


def test_the_catalogue_spans_every_release():
    firsts = {entry["first"] for entry in ENTRIES}
    lasts = {entry["last"] for entry in ENTRIES}
    assert "0.1.0" in firsts and "0.33.0" in lasts


def test_every_wording_has_the_verdict_of_the_curation():
    """No silent new wording: each entry is curated, and as curation.toml says today."""
    rules = catalogue.load_rules()
    verdict_keys = ("family", "kind", "values", "samples", "ignored")
    for entry in ENTRIES:
        bare = {key: value for key, value in entry.items() if key not in verdict_keys}
        assert catalogue.curated(entry), f"uncurated: {entry['template']}"
        assert catalogue.curate(bare, rules) == entry, f"stale verdict: {entry['template']}"


@pytest.mark.parametrize("entry", RECOGNISED, ids=[f"{e['kind']}-{e['first']}-{i}" for i, e in enumerate(RECOGNISED)])
def test_wording_is_recognised(entry):
    values = {name: number(text) for name, text in samples.expected(entry).items()}
    for line in samples.lines(entry):
        facts = [fact for fact in parse_line(line, 1) if fact.kind == entry["kind"]]
        assert facts, f"no {entry['kind']} in: {line}"
        assert facts[0].values.items() >= values.items(), line


IGNORED = [entry for entry in ENTRIES if "ignored" in entry]
# What the grammar says of any line it has no words for: an exception's or an error record's bare words, a cut.
GENERIC = {"exception", "error_record", "cut"}


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
