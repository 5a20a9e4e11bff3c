"""Shared helpers: the labelled corpus and a one-call analysis of a fixture."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor.ingest import sources
from advisor.live.launch import default_vllm_python
from advisor.live.server import free_port as free_port  # the tests take it from here
from advisor.report.build import analyze
from advisor.report.contract import Report

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = FIXTURES / "corpus"
# Real excerpts mined from public threads, labelled from the log and its thread alone (fixtures/wild).
WILD = FIXTURES / "wild"
# The live tier's vLLM: the Python of its own environment (tools/live/setup_env.sh builds it).
VLLM_PYTHON = default_vllm_python()
# Set by CI, where every system tool is installed: a missing one is then a failure, not a skip.
REQUIRE_TOOLS = "VLLM_ADVISOR_REQUIRE_TOOLS"


def require_tool(name: str, install: str) -> str:
    """The path of a system tool a test drives; skips (fails under VLLM_ADVISOR_REQUIRE_TOOLS=1) without it."""
    # Daemons live in sbin, which a non-root user's PATH often lacks.
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if path is None:
        reason = f"{name} is not installed: {install}"
        if os.environ.get(REQUIRE_TOOLS) == "1":
            pytest.fail(f"{reason} ({REQUIRE_TOOLS}=1)", pytrace=False)
        pytest.skip(reason)
    return path


def require_module(name: str, install: str):
    """A Python module a test drives (Ray for the archive example); skips, or fails under
    VLLM_ADVISOR_REQUIRE_TOOLS=1, without it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        reason = f"{name} is not installed: {install}"
        if os.environ.get(REQUIRE_TOOLS) == "1":
            pytest.fail(f"{reason} ({REQUIRE_TOOLS}=1)", pytrace=False)
        pytest.skip(reason)


def tool_module(path: str):
    """A script of tools/ loaded as a module (its folder on sys.path, as when it runs), never run."""
    script = ROOT / path
    # The wordings' harvest is shared by the tools of other folders (the stage map reads releases with it).
    for folder in (ROOT / "tools" / "wordings", script.parent):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(script.stem, script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus_cases(folder: Path = CORPUS) -> list[dict]:
    return [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines() if line.strip()]


def fixture_path(name: str) -> Path:
    matches = sorted(FIXTURES.rglob(f"{name}*.log"))
    assert matches, f"no fixture named {name}"
    # A whole name wins over a prefix: "healthy" is healthy.log, not healthy-cache-full.log.
    exact = [m for m in matches if m.stem == name]
    return (exact or matches)[0]


def analyze_fixture(name: str, user_command: str | None = None) -> Report:
    path = fixture_path(name)
    return analyze(sources.lines(sources.read_chunks(str(path))), path.name, user_command)


def verdict_of(data: bytes) -> tuple[str, str]:
    """The phase and failure word of a log given as bytes (a real log reshaped by a test)."""
    verdict = analyze(sources.lines([data]), "log").verdict
    return verdict.phase, verdict.failure


def fixture_line(name: str, number: int) -> str:
    """The cleaned text of one line of a real fixture."""
    for line in sources.lines(sources.read_chunks(str(fixture_path(name)))):
        if line.number == number:
            return line.text
    raise AssertionError(f"{name} has no line {number}")


def wait_for(condition, timeout: float) -> bool:
    """Polls condition until it holds or timeout seconds pass: a daemon under test gets a bounded wait."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def json_lines(path: Path) -> list[dict]:
    """The objects of a JSON-lines file a shipper writes; none before it exists."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def representative_logs() -> set[Path]:
    """The logs the log-by-log oracles read in every run (-m exhaustive reads them all): every kind of log once,
    as the smallest of each fixture folder and of each failure class and wrapper that the real corpora label
    (the fast tier's time grows with their size, not with the corpora's)."""
    kinds: dict = {}
    for path in sorted(FIXTURES.rglob("*.log")):
        kinds.setdefault(path.relative_to(FIXTURES).parts[0], []).append(path)
    for folder in (CORPUS, WILD):
        for case in corpus_cases(folder):
            for label in ("failure", "wrapper"):
                kinds.setdefault((folder, label, case[label]), []).append(folder / Path(case["file"]).name)
    return {min(paths, key=lambda path: (path.stat().st_size, path.name)) for paths in kinds.values()}


REPRESENTATIVE = representative_logs()


def tiered(items: list, log=lambda item: item) -> list:
    """Parameters of a test run once per log: a representative log's in every run, the others under -m exhaustive."""
    return [item if log(item) in REPRESENTATIVE else pytest.param(item, marks=pytest.mark.exhaustive) for item in items]


def tiers(logs: list[Path]) -> list:
    """The parameter of a test that reads many logs: the representative ones, then the others under -m exhaustive."""
    return [
        pytest.param([log for log in logs if log in REPRESENTATIVE], id="representative"),
        pytest.param([log for log in logs if log not in REPRESENTATIVE], id="others", marks=pytest.mark.exhaustive),
    ]


@pytest.fixture
def corpus():
    return corpus_cases()


def sigint_default() -> None:
    """preexec_fn for children the tests stop with SIGINT: a test run started as a background job
    inherits an ignored SIGINT, and Python then never turns Ctrl-C into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """The live tier's model, built locally once per session by the vLLM environment's Python."""
    if not VLLM_PYTHON.exists():
        pytest.skip(f"no vLLM venv python at {VLLM_PYTHON}: run tools/live/setup_env.sh first")
    out = tmp_path_factory.mktemp("tiny-llama")
    subprocess.run(
        [str(VLLM_PYTHON), str(ROOT / "tools/live/build_tiny_model.py"), "--out", str(out)], check=True, timeout=300
    )
    return out
