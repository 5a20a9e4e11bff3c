"""Markdown, NDJSON and text outputs: golden files on real logs, and the colour rules of the terminal."""

from __future__ import annotations

import json
import re
from dataclasses import asdict

import pytest
from conftest import analyze_fixture

from advisor.report.formats import render, text

# A startup failure, a runtime preemption (inferred from stats lines), a healthy log.
GOLDEN = {"088": "startup_failure", "091": "runtime_preemption", "062": "healthy"}


@pytest.mark.parametrize("name", GOLDEN)
def test_markdown_golden(name, file_regression):
    file_regression.check(
        render("markdown", [analyze_fixture(name)]), extension=".md", basename=f"markdown_{GOLDEN[name]}"
    )


@pytest.mark.parametrize("name", GOLDEN)
def test_text_golden(name, file_regression):
    file_regression.check(render("text", [analyze_fixture(name)]), extension=".txt", basename=f"text_{GOLDEN[name]}")


def test_markdown_puts_the_corrected_command_in_a_sh_block():
    report = analyze_fixture("088")
    assert f"```sh\n{report.command.corrected}\n```" in render("markdown", [report])


def test_ndjson_one_finding_a_line_with_source_and_verdict():
    reports = [analyze_fixture("091"), analyze_fixture("062")]
    records = [json.loads(line) for line in render("ndjson", reports).splitlines()]
    findings = [r for r in records if "rule" in r]
    assert [(r["rule"], r["line"]) for r in findings] == [(f.rule, f.line) for f in reports[0].findings]
    assert all(r["source"] == reports[0].source and r["verdict"]["failure"] == "preemption" for r in findings)
    assert findings[0]["remediations"][0]["flags"] == {"--max-num-seqs": "1"}
    # A healthy log still shows up: one line, its verdict, no finding.
    assert records[-1] == {"source": reports[1].source, "verdict": asdict(reports[1].verdict)}


ESC = "\x1b["
# An SGR sequence that sets a foreground or background colour (NO_COLOR allows bold, not colour).
COLOUR = re.compile(r"\x1b\[(?:\d+;)*(?:3\d|4\d|9[0-7]|10[0-7])(?:;\d+)*m")


def terminal_text(monkeypatch, no_color: str | None) -> str:
    monkeypatch.setattr(text.sys.stdout, "isatty", lambda: True, raising=False)
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    if no_color is not None:
        monkeypatch.setenv("NO_COLOR", no_color)
    return render("text", [analyze_fixture("088")])


def test_text_is_coloured_on_a_terminal(monkeypatch):
    assert COLOUR.search(terminal_text(monkeypatch, None))


def test_text_honours_no_color_on_a_terminal(monkeypatch):
    assert not COLOUR.search(terminal_text(monkeypatch, "1"))


def test_text_has_no_colour_when_not_a_terminal(monkeypatch):
    monkeypatch.setattr(text.sys.stdout, "isatty", lambda: False, raising=False)
    assert ESC not in render("text", [analyze_fixture("088")])
