"""What the head of a log shows besides its messages: the first request the server answered."""

from __future__ import annotations

from conftest import fixture_line, fixture_path

from advisor.fast.scan import scan_file
from advisor.ingest import sources
from advisor.ingest.sources import Line
from advisor.parse.facts import Fact
from advisor.parse.records import HEAD_LINES
from advisor.report.build import parse


def answers(name: str) -> list[int]:
    lines = sources.lines(sources.read_chunks(str(fixture_path(name))))
    return [f.line for f in parse(lines) if f.kind == "request_answered"]


def test_the_first_answered_request_is_a_fact():
    # Two chat completions answered, then a worker's traceback (vLLM-backport, an A100).
    assert answers("14089") == [2]


def test_a_health_check_or_a_refused_request_is_no_answer():
    # Line 1 answers /health, line 3 refuses a request (400, the grammar's http_error); line 15 answers one.
    assert [fixture_line("30003", n).split('"')[1] for n in (1, 3, 15)] == ["GET /health HTTP/1.1"] + [
        "POST /v1/chat/completions HTTP/1.1"
    ] * 2
    assert answers("30003") == [15]


def test_only_the_head_is_searched():
    warning, answered = fixture_line("14089", 3), fixture_line("14089", 2)

    def answered_after(lines: int) -> list[Fact]:
        log = [Line(n, warning) for n in range(1, lines + 1)] + [Line(lines + 1, answered)]
        return [f for f in parse(log) if f.kind == "request_answered"]

    assert [f.line for f in answered_after(HEAD_LINES - 1)] == [HEAD_LINES]
    assert answered_after(HEAD_LINES) == []


def test_the_fast_path_finds_the_same_answer():
    path = str(fixture_path("19108"))
    assert [f.line for f in scan_file(path) if f.kind == "request_answered"] == answers("19108") == [1]
