"""Property tests: whatever bytes come in, the pipeline returns a valid report citing real lines."""

from __future__ import annotations

import os
import shlex

import pytest
from conftest import CORPUS
from helpers.contract import analyze_bytes, check_report
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.command import CommandError

# Each property runs a taste of examples every time, and its full budget under -m exhaustive (.ci/run);
# ADVISOR_FUZZ_EXAMPLES=100000 pytest -m exhaustive tests/robustness/test_properties.py fuzzes at length.
EXAMPLES = int(os.environ.get("ADVISOR_FUZZ_EXAMPLES", "200"))
BUDGETS = [pytest.param(25, id="taste"), pytest.param(EXAMPLES, id="full", marks=pytest.mark.exhaustive)]


def bounded(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])


CORPUS_LOGS = sorted(CORPUS.glob("*.log"))
CORPUS_LINES = sorted({line for path in CORPUS_LOGS for line in path.read_bytes().splitlines(keepends=True)})
NOISE = [b"\x1b[31m", b"\x1b[0m", b"\x1b[1;32m", b"^[[33m", b"\x00", b"\r", b"\r\n", b"\n", b"\xff\xfe", b"\x1b("]


def split_into_chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    """The same bytes delivered in arbitrary chunk sizes, as a pipe would."""
    points = [*sorted({min(c, len(data)) for c in cuts}), len(data)]
    chunks, start = [], 0
    for point in points:
        chunks.append(data[start:point])
        start = point
    return chunks


def assert_valid(data: bytes, cuts: list[int]) -> None:
    report, count = analyze_bytes(split_into_chunks(data, cuts))
    check_report(report, count)


cuts = st.lists(st.integers(min_value=0, max_value=20000), max_size=8)


@pytest.mark.parametrize("examples", BUDGETS)
def test_arbitrary_bytes(examples):
    @bounded(examples)
    @given(st.binary(max_size=4096), cuts)
    def check(data, cut_points):
        assert_valid(data, cut_points)

    check()


@pytest.mark.parametrize("examples", BUDGETS)
def test_interleaved_real_lines(examples):
    @bounded(examples)
    @given(st.lists(st.sampled_from(CORPUS_LINES), min_size=1, max_size=60), cuts)
    def check(picked, cut_points):
        assert_valid(b"".join(picked), cut_points)

    check()


@pytest.mark.parametrize("examples", BUDGETS)
def test_truncated_at_any_byte(examples):
    @bounded(examples)
    @given(st.sampled_from(CORPUS_LOGS), st.floats(min_value=0, max_value=1), cuts)
    def check(path, fraction, cut_points):
        data = path.read_bytes()
        assert_valid(data[: int(len(data) * fraction)], cut_points)

    check()


@pytest.mark.parametrize("examples", BUDGETS)
def test_noise_inserted(examples):
    @bounded(examples)
    @given(st.sampled_from(CORPUS_LOGS), st.lists(st.tuples(st.floats(0, 1), st.sampled_from(NOISE)), max_size=40))
    def check(path, insertions):
        data = bytearray(path.read_bytes())
        for fraction, noise in sorted(insertions, reverse=True):  # from the end, so earlier offsets stay valid
            position = int(len(data) * fraction)
            data[position:position] = noise
        assert_valid(bytes(data), [])

    check()


@pytest.mark.parametrize("examples", BUDGETS)
def test_user_command_is_corrected_safely(examples):
    @bounded(examples)
    @given(
        st.lists(st.sampled_from(CORPUS_LINES), min_size=1, max_size=30),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=80),
    )
    def check(picked, user_command):
        try:
            shlex.split(user_command)
        except ValueError:  # an unclosed quote: refused as a usage error, never half-parsed
            with pytest.raises(CommandError):
                analyze_bytes([b"".join(picked)], "vllm serve " + user_command)
            return
        report, count = analyze_bytes([b"".join(picked)], "vllm serve " + user_command)
        check_report(report, count)

    check()
