"""A per-line prefix no wrapper names is learned from the log's head and stripped from every line."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORPUS, REPRESENTATIVE, WILD, analyze_fixture, corpus_cases, fixture_path, verdict_of

from advisor.ingest import sources
from advisor.report.build import parse

# What tools print before each line: stern's pod and container, a log viewer's line number.
PREFIXES = {
    "stern": lambda number: "vllm-7d9f8b6c4-x2k9p vllm ",
    "viewer": lambda number: f"{number:5d} | ",
}
# Logs whose prefixed form reads otherwise: no anchor before which the prefix could be learned
# (an unleveled exception alone, a terminal-wrapped message, IPython's own traceback format, a rendered
# quote's bar or a pasted launch command, which are read only at a line's start, uvicorn's access lines
# before a cut record, a reporter's prose between two code blocks).
UNLEARNABLE = {
    "025",
    "315",
    "4003",
    "6012",
    "6056",
    "7046",
    "8029",
    "9033",
    "10048",
    "11027",
    "12054",
    "14118",
    "15069",
    "15074",
    "18012",
    "18308",
    "21016",
    "23108",
    "24013",
    "25104",
    "26006",
    "26209",
    "28108",
    "29111",
    "29209",
    "29210",
    "30024",
    "30308",
    "31104",
    "31105",
    "32509",
    "32513",
    "33506",
    "36015",
    "36018",
    "36109",
    "37114",
    "38107",
    "38108",
    "38109",
    "39114",
    "40402",
}
# ... or in one form only: Dynamo's tracing columns before a traceback whose pid it dropped, under stern's.
UNLEARNABLE_AS = {("27210", "stern")}
UNLEARNABLE_KEYS: set[object] = {*UNLEARNABLE, *UNLEARNABLE_AS}
LOGS = [
    pytest.param(
        folder,
        case,
        form,
        id=f"{case['id']}-{form}",
        marks=([pytest.mark.xfail(strict=True)] if {case["id"], (case["id"], form)} & UNLEARNABLE_KEYS else [])
        + ([] if folder / Path(case["file"]).name in REPRESENTATIVE else [pytest.mark.exhaustive]),
    )
    for folder in (CORPUS, WILD)
    for case in corpus_cases(folder)
    for form in sorted(PREFIXES)
]


def prefixed(data: bytes, prefix) -> bytes:
    lines = data.decode("utf-8", errors="surrogateescape").split("\n")
    return "\n".join(prefix(n) + line if line else line for n, line in enumerate(lines, 1)).encode(
        "utf-8", errors="surrogateescape"
    )


def test_a_container_prefix_is_learned_and_the_traceback_behind_it_read():
    # kserve's pod log, every line behind "kserve-container ": the traceback is the start failing.
    path = fixture_path("5049")
    learned = sources.learned_prefix(path.read_bytes())
    assert learned is not None and learned.pattern == r"(?:kserve\-container\ )"
    verdict = analyze_fixture("5049").verdict
    assert (verdict.phase, verdict.failure) == ("startup", "engine_startup_failed")
    # The traceback behind the prefix is read to its last frame (line 12, inside vLLM's make_arg_parser).
    facts = parse(sources.lines(sources.read_chunks(str(path))))
    assert [f.line for f in facts if f.kind in ("traceback_start", "frame")] == [3, 4, 5, 6, 9, 12]


def test_a_process_tag_is_never_part_of_the_prefix():
    # llm-d's stern lines: "<pod> vllm (APIServer pid=1) ...": the tag tells processes apart, so it stays.
    learned = sources.learned_prefix(fixture_path("7050").read_bytes())
    assert learned is not None and "APIServer" not in learned.pattern


def test_a_plain_log_learns_no_prefix():
    assert sources.learned_prefix(fixture_path("089").read_bytes()) is None


@pytest.mark.parametrize(("folder", "case", "form"), LOGS)
def test_a_prefix_on_every_line_keeps_the_verdict(folder: Path, case: dict, form: str):
    data = (folder / Path(case["file"]).name).read_bytes()
    assert verdict_of(prefixed(data, PREFIXES[form])) == verdict_of(data)
