"""The library API: what `advisor` exports, each input form giving the CLI's report."""

from __future__ import annotations

import io
import json
from dataclasses import asdict
from pathlib import Path

import pytest
from conftest import CORPUS, ROOT, WILD, tiers

import advisor
from advisor import analyze, follow_lines
from advisor.cli import main

LOGS = [CORPUS / "088-live-v0320-cpu-kv-too-small-32k.log", CORPUS / "091-live-v0320-cpu-preemption-inferred.log"]


def test_the_api_is_what_the_package_exports():
    subpackages = {path.stem for path in (ROOT / "advisor").iterdir() if path.suffix == ".py" or path.is_dir()}
    exported = {name for name in dir(advisor) if not name.startswith("_")} - subpackages
    assert exported == set(advisor.__all__)
    assert (ROOT / "advisor" / "py.typed").exists()


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name[:3])
def test_every_input_form_gives_the_report_of_the_cli(log, capsys):
    assert main(["--format", "json", str(log)]) in (0, 1)
    cli = json.loads(capsys.readouterr().out)
    data = log.read_bytes()
    forms = {
        "path": analyze(log),
        "str path": analyze(str(log)),
        "plain path": analyze(log, fast=False),
        "bytes": analyze(data, name=str(log)),
        # Lines as the file holds them: a carriage return inside a line does not end it.
        "lines": analyze(io.StringIO(data.decode(), newline="\n"), name=str(log)),
        "split lines": analyze(data.decode().split("\n"), name=str(log)),
    }
    for form, report in forms.items():
        assert json.loads(report.to_json()) == cli, form
    assert isinstance(forms["path"], advisor.Report) and forms["path"].verdict.failure == cli["verdict"]["failure"]


@pytest.mark.parametrize("logs", tiers(sorted(CORPUS.glob("*.log")) + sorted(WILD.glob("*.log"))))
def test_the_fast_path_gives_the_plain_path_s_report_as_an_object(logs):
    for log in logs:
        fast, plain = analyze(log), analyze(log, fast=False)
        assert type(fast) is type(plain) is advisor.Report and type(fast.events) is list, log.name
        assert fast == plain, log.name


def test_the_command_to_correct_is_taken_as_the_cli_takes_it(capsys):
    log, command = CORPUS / "067-cuda-graph-capture-high-util.log", "vllm serve my/model --gpu-memory-utilization 0.98"
    if not log.exists():
        log = next(CORPUS.glob("067-*.log"))
    assert main(["--format", "json", "--cmd", command, str(log)]) in (0, 1)
    cli = json.loads(capsys.readouterr().out)["command"]
    report = analyze(Path(log), command)
    assert asdict(report.command) == cli and report.command.corrected.startswith("vllm serve my/model")


def test_follow_lines_gives_what_follow_writes(capsys):
    log = LOGS[1]
    with open(log, "rb") as lines:
        records = [item.to_dict() for item in follow_lines(lines, "<stdin>")]
    with open(log, "rb") as stdin:
        import sys

        saved, sys.stdin = sys.stdin, io.TextIOWrapper(io.BufferedReader(stdin), encoding="utf-8")
        try:
            assert main(["follow", "--format", "ndjson", "-"]) in (0, 1)
        finally:
            sys.stdin = saved
    written = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert records and [r["rule"] for r in records] == [w["rule"] for w in written]
