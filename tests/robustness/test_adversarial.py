"""Hostile logs (fixtures/adversarial, and giants built at test time): a sensible verdict in bounded time and memory."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from conftest import FIXTURES, ROOT, fixture_path
from helpers.contract import analyze_bytes, check_report
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.fast.templates import FactTemplates
from advisor.ingest import sources
from advisor.parse.facts import MAX_ARGS_TEXT, plausible
from advisor.report.build import parse
from advisor.rules.remedies import arithmetic

ADVERSARIAL = FIXTURES / "adversarial"
CASES = [json.loads(line) for line in (ADVERSARIAL / "cases.jsonl").read_text().splitlines() if line.strip()]
BASE = (ADVERSARIAL / "excerpt-088-kv-too-small.log").read_bytes()
ARGS_TAIL = b"'kv_cache_memory_bytes': 4000000}"
# Run the CLI in a child and report its own peak RSS, so other tests' children do not count. Not
# getrusage's ru_maxrss: Linux carries it across exec, so a child forked from a big pytest process
# would report pytest's size; VmHWM is the peak of the child's own memory.
MEASURED_CLI = (
    "import re, sys\nfrom advisor.cli import main\ncode = main(sys.argv[1:])\n"
    "status = open('/proc/self/status').read()\n"
    "print(re.search(r'VmHWM:\\s+(\\d+) kB', status)[1], file=sys.stderr)\nsys.exit(code)"
)


def measured_cli(path) -> tuple[dict, int, float]:
    """The JSON report, the peak RSS in MiB and the wall time of `vllm-advisor --format json PATH`."""
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", MEASURED_CLI, "--format", "json", str(path)], capture_output=True, cwd=ROOT, timeout=300
    )
    elapsed = time.monotonic() - start
    assert done.returncode in (0, 1), done.stderr.decode()[-2000:]
    return json.loads(done.stdout), int(done.stderr.split()[-1]) // 1024, elapsed


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_adversarial_fixture_gets_a_sensible_verdict(case):
    start = time.monotonic()
    report, count = analyze_bytes(sources.read_chunks(str(ADVERSARIAL / case["file"])))
    assert time.monotonic() - start < 10
    check_report(report, count)
    assert report.verdict.failure in case["accept"]


@pytest.mark.exhaustive
def test_200_mb_single_line_is_read_in_bounded_time_and_memory(tmp_path):
    # The real "KV cache is needed" line, repeated without a newline: one 200 MB line.
    error_line = next(line for line in BASE.splitlines() if b"KV cache is needed" in line)
    block = error_line * (2**20 // len(error_line) + 1)
    path = tmp_path / "one-line.log"
    with path.open("wb") as out:
        for _ in range(200):
            out.write(block[: 2**20])
        out.write(b"\n")
    report, rss_mib, seconds = measured_cli(path)
    assert rss_mib < 200, "the line must not be held whole"
    assert seconds < 60
    assert report["verdict"]["phase"] in ("startup", "unknown")


@pytest.mark.exhaustive
def test_million_line_traceback_is_bounded(tmp_path):
    # A runaway recursion: one real frame (file line plus code line) printed a million times.
    lines = fixture_path("088").read_bytes().splitlines(keepends=True)
    first_frame = next(i for i, line in enumerate(lines) if line.startswith(b'  File "'))
    path = tmp_path / "recursion.log"
    with path.open("wb") as out:
        out.write(b"".join(lines[:first_frame]))
        block = b"".join(lines[first_frame : first_frame + 2]) * 10_000
        for _ in range(50):
            out.write(block)
        out.write(b"".join(lines[first_frame + 2 :]))
    report, rss_mib, seconds = measured_cli(path)
    assert rss_mib < 200
    assert seconds < 120
    assert report["verdict"]["failure"] == "kv_cache_insufficient"


# Runs of one character class, as a crashing process or an attacker can print them: each once found
# a regex that backtracked (quadratic on spaces or word characters, cubic after a box bar).
PATHOLOGICAL_UNITS = [
    " ",
    "\t",
    "x",
    "1",
    ".",
    "1.",
    "x.",
    "│",
    "│ ",
    " │",
    "[",
    "(",
    "{",
    "'",
    '"',
    "\\",
    ":",
    ", ",
    "x=",
    "a, b=",
    "\x1b[",
    "\x1b[1",
    "^[[",
    "-",
    "/",
    "x | ",
    "[pod/",
    "é",
    "1 GiB ",
    "1,",
    "ERROR ",
    "(pid=1) ",
    "[a.py:1] ",
    "2024-01-01T00:00:00Z ",
    "Nov 29 09:50:01 h p[1]: ",
    "x ValueError: ",
    'File "',
    "CUDA out of memory. ",
    "[repeated 2x across cluster] ",
]


def test_pathological_long_lines_take_linear_time(tmp_path):
    path = tmp_path / "pathological.log"
    with path.open("wb") as out:
        for unit in PATHOLOGICAL_UNITS:
            line = (unit * (64 * 1024 // len(unit) + 1))[: 64 * 1024]
            out.write(line.encode() + b"\n" + (line[:-1] + "!").encode() + b"\n")
    report, _, seconds = measured_cli(path)
    assert seconds < 15, "a regex backtracks on one of PATHOLOGICAL_UNITS"
    assert report["verdict"]["failure"] in ("none", "cuda_oom_runtime", "engine_startup_failed")


@pytest.mark.exhaustive
def test_long_runtime_log_takes_linear_time(tmp_path):
    # Days of a serving engine: one stats line every few seconds, restarts with their configs.
    stats = next(line for line in fixture_path("091").read_bytes().splitlines(keepends=True) if b"throughput" in line)
    config = next(line for line in BASE.splitlines(keepends=True) if b"with config:" in line)
    path = tmp_path / "days.log"
    path.write_bytes(stats * 20_000 + config * 5_000)
    report, _, seconds = measured_cli(path)
    assert seconds < 30, "rule matching or run splitting is quadratic again"
    assert len(report["events"]) == 25_000


@pytest.mark.parametrize(
    "nested",
    [
        b"[" * 30_000 + b"]" * 30_000,  # under MAX_ARGS_TEXT: literal_eval itself must fail soft
        b"{'a': " * 5_000 + b"1" + b"}" * 5_000,
        b"(" * 30_000 + b")" * 30_000,
        b"'" + b"x" * 3 * 2**20 + b"'",  # megabytes long: cut by sources.MAX_LINE, refused by MAX_ARGS_TEXT
    ],
    ids=["list-30000-deep", "dict-5000-deep", "tuple-30000-deep", "3-mib-string"],
)
def test_hostile_launch_arguments_fail_soft(nested):
    data = BASE.replace(ARGS_TAIL, b"'kv_cache_memory_bytes': " + nested + b"}")
    assert len(nested) > MAX_ARGS_TEXT or len(nested) < 64 * 1024
    start = time.monotonic()
    report, count = analyze_bytes([data])
    assert time.monotonic() - start < 10
    check_report(report, count)
    assert report.verdict.failure == "kv_cache_insufficient"
    # The engine-config line still gives the model and the length: the command is rebuilt from it.
    assert report.command.corrected.startswith("vllm serve /models/tiny-llama ")


def test_unreadable_launch_arguments_are_explained():
    line = BASE.replace(ARGS_TAIL, b"'x': " + b"[" * 30_000 + b"]" * 30_000 + b"}").splitlines()[6]
    facts = [f for f in parse(sources.lines([line])) if f.kind == "non_default_args"]
    assert facts and facts[0].text["unreadable"].startswith("launch arguments too large")


# Every figure a Fact can carry (plausible: 0 or 1e-6..1e15 in size, either sign).
figures = st.one_of(
    st.just(0), st.integers(-(10**15), 10**15), st.floats(min_value=-1e15, max_value=1e15, allow_nan=False)
).filter(plausible)
NAMES = [
    "max_seq_len",
    "kv_needed_gib",
    "kv_available_gib",
    "kv_cache_memory_bytes",
    "estimated_max_model_len",
    "kv_cache_tokens",
    "max_tokens_in_kv_cache",
    "gpu_memory_utilization",
    "total_gpu_gib",
    "free_gpu_gib",
    "num_attention_heads",
    "tensor_parallel_size",
    "max_concurrency",
    "peak_running_reqs",
    "requested_tokens",
    "long_prompt_tokens",
    "swap_space_gib",
    "derived_max_model_len",
]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(NAMES), figures))
def test_arithmetic_never_divides_by_zero_or_overflows(values):
    for name, value in arithmetic(values).items():
        if isinstance(value, float):
            assert value == value and abs(value) != float("inf"), (name, value)


def test_arithmetic_on_zero_estimates():
    out = arithmetic(
        {
            "max_seq_len": 0,
            "kv_needed_gib": 0,
            "kv_available_gib": 0,
            "estimated_max_model_len": 0,
            "total_gpu_gib": 0,
            "free_gpu_gib": 0,
            "max_tokens_in_kv_cache": 0,
        }
    )
    assert "suggested_max_model_len" not in out and "free_fraction" not in out


def long_lines(count: int) -> list[bytes]:
    """A real message line, then 60 KB of prompt-like prose full of anchor words that are no anchors;
    each line of its own shape (a different word in front of the prose)."""
    line = next(line for line in fixture_path("089").read_bytes().splitlines() if b"Maximum concurrency for" in line)
    prose = b" the model raised an Error, an Exception, saw Engine 3 and File blocks;" * 850
    return [line + b" " + bytes([97 + i % 26, 97 + i // 26 % 26, 97 + i // 676 % 26]) + prose for i in range(count)]


def test_long_lines_of_anchor_words_in_bounded_time_and_memory(tmp_path):
    # Each such line was 0.13 s of walking the regex of all anchors.
    path = tmp_path / "long-lines.log"
    path.write_bytes(b"\n".join(long_lines(100)) + b"\n")
    report, rss_mib, seconds = measured_cli(path)
    assert rss_mib < 200 and seconds < 60
    assert sum(1 for event in report["events"] if event["kind"] == "concurrency") == 100


def test_long_lines_leave_no_parse_cached():
    # 4096 cached trees of 64 KB lines held 700 MB: lines longer than MAX_CACHED_LINE are parsed anew.
    templates = FactTemplates()
    for number, line in enumerate(long_lines(20), start=1):
        facts = templates.parse_line(line.decode(), number)
        assert [fact.kind for fact in facts] == ["kv_cache_size", "concurrency"]
    assert not templates.trees.trees and not templates.recipes
