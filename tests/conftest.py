"""Shared helpers: the labelled corpus and a one-call analysis of a fixture."""
from __future__ import annotations

import json
import signal
import socket
from pathlib import Path

import pytest

from advisor import sources
from advisor.report import Report, analyze

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = FIXTURES / "corpus"


def corpus_cases() -> list[dict]:
    return [json.loads(line) for line in (CORPUS / "cases.jsonl").read_text().splitlines() if line.strip()]


def fixture_path(name: str) -> Path:
    matches = sorted(FIXTURES.rglob(f"{name}*.log"))
    assert matches, f"no fixture named {name}"
    return matches[0]


def analyze_fixture(name: str, user_command: str | None = None) -> Report:
    path = fixture_path(name)
    return analyze(sources.lines(sources.read_chunks(str(path))), path.name, user_command)


def fixture_line(name: str, number: int) -> str:
    """The cleaned text of one line of a real fixture."""
    for line in sources.lines(sources.read_chunks(str(fixture_path(name)))):
        if line.number == number:
            return line.text
    raise AssertionError(f"{name} has no line {number}")


@pytest.fixture
def corpus():
    return corpus_cases()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def sigint_default() -> None:
    """preexec_fn for children the tests stop with SIGINT: a test run started as a background job
    inherits an ignored SIGINT, and Python then never turns Ctrl-C into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
