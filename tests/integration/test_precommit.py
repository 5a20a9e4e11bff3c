"""The pre-commit hook, end to end: the real pre-commit installs this repository at HEAD and runs it on real logs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fixture_path, require_tool

REPOSITORY = Path(__file__).resolve().parents[2]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def pre_commit(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    # The hook's environment is built under `home`, so the test never reuses a stale install.
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        check=False,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture
def git_installed() -> None:
    """pre-commit clones the hook's repository with git."""
    require_tool("git", "apt-get install git")


def test_hook_fails_on_a_failing_log_and_passes_on_a_healthy_one(git_installed, tmp_path):
    # pre-commit clones the repository at this commit: the hook definition must be committed there.
    rev = git(REPOSITORY, "rev-parse", "HEAD")
    assert git(REPOSITORY, "ls-tree", "--name-only", rev, ".pre-commit-hooks.yaml") == ".pre-commit-hooks.yaml"
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    git(project, "config", "user.name", "vllm-advisor test")
    git(project, "config", "user.email", "test@vllm-advisor.invalid")
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {REPOSITORY}\n    rev: {rev}\n    hooks:\n      - id: vllm-advisor\n"
    )
    failing, healthy = fixture_path("088"), fixture_path("062")
    shutil.copy(failing, project / failing.name)
    shutil.copy(healthy, project / healthy.name)
    git(project, "add", ".")
    home = tmp_path / "pre-commit-home"

    failed = pre_commit(project, home, "run", "--files", failing.name)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "STARTUP FAILURE: kv_cache_insufficient" in failed.stdout
    assert "Corrected command" in failed.stdout and "--max-model-len 12288" in failed.stdout

    passed = pre_commit(project, home, "run", "--files", healthy.name)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
