"""Archived logs at scale: a folder on one machine (its logs read in parallel), a bucket with Ray."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import CORPUS, ROOT, require_module

from advisor import analyze

ARCHIVE = sorted(CORPUS.glob("08*.log"))[:6] + sorted(CORPUS.glob("09[0-3]*.log"))


@pytest.fixture()
def archive(tmp_path):
    """A folder as archives hold logs: some in a subfolder, one compressed, one hidden (skipped)."""
    for index, path in enumerate(ARCHIVE):
        target = tmp_path / ("older" if index % 2 else "") / path.name
        target.parent.mkdir(exist_ok=True)
        if index == 3:
            target.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
        else:
            shutil.copy(path, target)
    (tmp_path / ".trash").mkdir()
    shutil.copy(ARCHIVE[0], tmp_path / ".trash" / "deleted.log")
    return tmp_path


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True)


def test_a_folder_gives_each_log_the_report_it_gets_alone(archive):
    run = cli("--format", "json", str(archive))
    assert run.returncode == 1 and not run.stderr  # the corpus logs show failures
    reports = json.loads(run.stdout)
    files = sorted(path for path in archive.rglob("*") if path.is_file() and ".trash" not in path.parts)
    assert [r["source"] for r in reports] == [str(path) for path in files]
    for report, path in zip(reports, files, strict=True):
        assert report == json.loads(analyze(path).to_json())


def test_a_folder_with_an_unreadable_log_is_a_one_line_error(archive):
    (archive / "broken.log.gz").write_bytes(gzip.compress(b"INFO start\n")[:-8])  # truncated
    run = cli(str(archive))
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "broken.log.gz: cannot read" in run.stderr


def test_an_empty_folder_is_a_one_line_error(tmp_path):
    run = cli(str(tmp_path))
    assert run.returncode == 2 and run.stderr == f"vllm-advisor: {tmp_path}: no files in it\n"


def test_the_ray_example_judges_a_folder_as_the_cli_does(archive, tmp_path_factory):
    require_module("ray", "pip install 'ray[data]'")
    # Run as its README says, in a process of its own: a local Ray starts and stops with it (and
    # leaves nothing in this process, whose later tests measure their children's memory).
    out = tmp_path_factory.mktemp("ray") / "verdicts"  # outside the archive, which the CLI reads after
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "ray" / "verdicts.py"), str(archive), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for path in sorted(out.glob("*.json")) for line in path.read_text().splitlines()]
    cli_reports = {r["source"]: r for r in json.loads(cli("--format", "json", str(archive)).stdout)}
    # Ray reads the hidden folder too (it is the bucket's business what it holds): compare the others.
    rows = [row for row in rows if ".trash" not in row["path"]]
    assert sorted(row["path"] for row in rows) == sorted(cli_reports)
    for row in rows:
        report = json.loads(row["report"])
        assert row["failure"] == report["verdict"]["failure"] == cli_reports[row["path"]]["verdict"]["failure"]
        assert report["findings"] == cli_reports[row["path"]]["findings"]
