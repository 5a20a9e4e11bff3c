"""The shipped JSON Schemas: made from the contract's models, and every golden report keeps them."""

from __future__ import annotations

import json
import shlex
import sys

import jsonschema
import pytest
from conftest import ROOT

from advisor import follow_lines
from advisor.cli import main

sys.path.insert(0, str(ROOT / "tools"))
from write_schemas import schema_texts

SCHEMAS = ROOT / "advisor" / "report" / "schemas"
GOLDEN_REPORTS = sorted((ROOT / "tests" / "snapshots" / "test_corpus").glob("*.json"))


def validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / f"{name}.json").read_text()))


def test_shipped_schemas_are_the_models():
    for path, text in schema_texts().items():
        assert path.read_text() == text, f"{path.name} is stale: run python tools/write_schemas.py"


def test_schema_command_prints_the_shipped_schema(capsys):
    assert main(["schema"]) == 0
    assert capsys.readouterr().out == (SCHEMAS / "report.json").read_text()
    assert main(["schema", "finding"]) == 0
    assert json.loads(capsys.readouterr().out)["properties"]["schema"]["const"] == "vllm-advisor.finding/1"


@pytest.mark.parametrize("path", GOLDEN_REPORTS, ids=lambda p: p.stem)
def test_golden_report_keeps_the_schema(path):
    report = json.loads(path.read_text())
    validator("report").validate(report)
    command = report["command"]
    if command["corrected"] is not None:  # a whole command, never a bare flag fragment
        assert command["original"] and not shlex.split(command["corrected"])[0].startswith("-")
        assert command["change"] and command["change_args"] is None
    if command["change_args"] is not None:
        assert command["original"] is None and shlex.split(command["change_args"])[0].startswith("--")


def test_schemas_reject_what_the_contract_does_not_allow():
    report = json.loads(GOLDEN_REPORTS[0].read_text())
    with pytest.raises(jsonschema.ValidationError):
        validator("report").validate({**report, "schema": "vllm-advisor.report/1"})
    with pytest.raises(jsonschema.ValidationError):
        validator("report").validate({key: value for key, value in report.items() if key != "verdict"})


@pytest.mark.parametrize(
    "name", ["088-live-v0320-cpu-kv-too-small-32k.log", "091-live-v0320-cpu-preemption-inferred.log"]
)
def test_streamed_finding_records_keep_the_schema(name):
    with open(ROOT / "fixtures" / "corpus" / name, "rb") as log:
        records = [item.to_dict() for item in follow_lines(log, name)]
    assert records
    for record in records:
        validator("finding").validate(record)
