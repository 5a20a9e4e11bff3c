"""The metric names of every vLLM release (advisor/scrape/names.json, read from each release's source by
tools/metric_names/extract.py) against what the rules read and what the captured dumps hold."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from advisor.scrape.fetch import read
from advisor.scrape.names import MEASURES, matching_releases, release_names, table
from advisor.scrape.snapshot import parse

RELEASES = table()["releases"]
# Where each measure the rules read first appears; from there on every release must name it
# (a rename that MEASURES missed would leave a gap).
FIRST = {
    "kv_cache_usage": "0.2.3",
    "running": "0.2.3",
    "waiting": "0.2.3",
    "preemptions": "0.4.3",
    "success": "0.4.2",
    "prompt_tokens": "0.3.1",
    "generation_tokens": "0.3.1",
    "ttft": "0.3.1",
    "tpot": "0.3.1",
    "e2e": "0.3.1",
    "queue_time": "0.6.4",
    "prefill_time": "0.6.4",
    "decode_time": "0.6.4",
    "prompt_length": "0.4.2",
    "generation_length": "0.4.2",
    "prefix_queries": "0.7.3",
    "prefix_hits": "0.7.3",
    "cache_config": "0.3.3",
    "request_preemptions": "0.30.0",
}


def order(version: str) -> int:
    return RELEASES.index(version)


def test_every_release_from_0_1_to_0_33_was_read():
    # 99: every release pip lists from 0.1.0 to 0.33.0 (yanked ones are not listed).
    assert RELEASES[0] == "0.1.0" and RELEASES[-1] == "0.33.0" and len(RELEASES) >= 99


def test_every_name_the_rules_read_is_one_vllm_defined():
    defined = set(table()["metrics"])
    for measure, names in MEASURES.items():
        assert set(names) <= defined, (measure, set(names) - defined)
    assert set(FIRST) == set(MEASURES)


@pytest.mark.parametrize("version", RELEASES)
def test_release_names_every_measure_it_has(version):
    names = release_names(version)
    resolved = {measure for measure, candidates in MEASURES.items() if set(candidates) & set(names)}
    expected = {measure for measure, first in FIRST.items() if order(version) >= order(first)}
    assert resolved == expected, (version, sorted(expected - resolved), sorted(resolved - expected))
    assert all(kind in ("counter", "gauge", "histogram", "summary", "info") for kind in names.values())


@pytest.mark.parametrize(
    "dump", sorted((FIXTURES / "live").rglob("*.metrics.txt")), ids=lambda p: str(p.relative_to(FIXTURES / "live"))
)
def test_captured_dump_matches_its_own_release(dump):
    version = json.loads(dump.with_name(dump.name.replace(".metrics.txt", ".json")).read_text())["vllm_version"]
    snapshot = parse(read(str(dump)))
    mine = release_names(version)
    # Families the source builds at run time (the _created gauges prometheus_client adds) are in no release.
    unknown = {name for name in snapshot.samples if not name.endswith("_created") and name not in table()["metrics"]}
    assert not unknown, unknown
    assert {name for name in snapshot.samples if name in table()["metrics"]} <= set(mine)
    assert version in matching_releases(snapshot)
