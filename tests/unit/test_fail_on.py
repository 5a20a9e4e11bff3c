"""--fail-on: which findings make the exit code 1, on real logs."""

from __future__ import annotations

import pytest
from conftest import fixture_path

from advisor.cli import main

# 088: an error (startup KV cache too small); 091: a warning (preemption) plus info advice;
# 062: healthy, no finding; 044: healthy.
EXPECTED = {
    None: {"088": 1, "091": 1, "062": 0, "044": 0},
    "error": {"088": 1, "091": 0, "062": 0, "044": 0},
    "warning": {"088": 1, "091": 1, "062": 0, "044": 0},
    "never": {"088": 0, "091": 0, "062": 0, "044": 0},
}


@pytest.mark.parametrize("fail_on", EXPECTED)
@pytest.mark.parametrize("name", ["088", "091", "062", "044"])
def test_exit_code(fail_on, name, capsys):
    option = [] if fail_on is None else ["--fail-on", fail_on]
    assert main(["--format", "json", *option, str(fixture_path(name))]) == EXPECTED[fail_on][name]
    assert capsys.readouterr().out.startswith("{")


def test_any_failing_file_fails_the_whole_invocation(capsys):
    paths = [str(fixture_path("062")), str(fixture_path("091"))]
    assert main(["--format", "ndjson", "--fail-on", "warning", *paths]) == 1
    assert main(["--format", "ndjson", "--fail-on", "error", *paths]) == 0


def test_an_unknown_threshold_is_a_usage_error(capsys):
    assert main(["--fail-on", "sometimes", str(fixture_path("062"))]) == 2
    error = capsys.readouterr().err
    assert "--fail-on" in error and error.count("\n") == 1
