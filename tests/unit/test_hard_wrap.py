"""A terminal's hard wrap keeps the verdict: every real log, cut into rows of a terminal's width."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORPUS, REPRESENTATIVE, WILD, corpus_cases, verdict_of

# The widths operators' terminals wrap at in the threads (about 160 columns, and 120).
WIDTHS = (120, 160)
# What a wrap still changes, and why: an anchor's own words cut in two leave the row with no anchor to
# be read on from (the prefilter finds lines by those words); an exception's class cut in two is read
# as another.
KNOWN = {
    (160, "29103"): "the wrap cuts the name of the method the V0 worker was asked to run",
    (120, "28317"): "XLA's 'Ran out of memory in memory space' cut by the wrap: a compile's error, not its OOM",
    (120, "27001"): "the wrap cuts 'operation timeout' before its last letter: no row holds the watchdog's anchor",
    (160, "27210"): "Dynamo's tracing columns push each frame's path past the wrap: the traceback's frames are lost",
    (120, "25309"): "the wrap cuts the shm-broadcast wait's anchor words in two: neither row holds an anchor",
    (120, "14110"): "the words of tt-metal's out-of-memory error cut by the wrap",
    (120, "14121"): "the request's id falls on the wrap's continuation, which has no ERROR envelope",
    (160, "14121"): "the request's id falls on the wrap's continuation, which has no ERROR envelope",
    (120, "315"): "the exception's class name cut by the wrap",
    (120, "5022"): "an anchor's words (the engine-dead error) cut by the wrap",
    (120, "9008"): "an anchor's words cut by the wrap",
    (120, "9013"): "an anchor's words (the out-of-memory error's) cut by the wrap",
    (120, "10020"): "an anchor's words (the shared-memory broadcast's wait) cut by the wrap",
    (160, "315"): "the exception's class name cut by the wrap",
    (160, "8041"): "an anchor's words cut by the wrap",
    (120, "39117"): "the wrap cuts 'No platform detected, vLLM is running on UnspecifiedPlatform' in two",
    (120, "19208"): "an anchor's words (the illegal memory access) cut by the wrap",
    (120, "20106"): "an anchor's words (the stage engine's fatal error) cut by the wrap",
    (120, "24101"): "'# CPU blocks' cut by the wrap under DJL's long prefix: the line of no cache blocks is not read",
    (120, "32305"): "the attention backend's refusal and its reason ('kv_cache_dtype not supported') fall on two rows",
    (160, "32711"): "Ray's actor prefix pushes the logger's place ([core.py:1102], the busy loop's) past the wrap",
    (120, "35204"): "the wrap cuts the shm-broadcast wait's anchor words in two under a collector's timestamp",
}
LOGS = [
    pytest.param(
        folder / Path(case["file"]).name,
        width,
        id=f"{case['id']}-{width}",
        marks=(
            [pytest.mark.xfail(reason=KNOWN[width, case["id"]], strict=True)] if (width, case["id"]) in KNOWN else []
        )
        + ([] if folder / Path(case["file"]).name in REPRESENTATIVE else [pytest.mark.exhaustive]),
    )
    for folder in (CORPUS, WILD)
    for case in corpus_cases(folder)
    for width in WIDTHS
]


def hard_wrapped(data: bytes, width: int) -> bytes:
    text = data.decode("utf-8", errors="surrogateescape")
    rows = [line[i : i + width] for line in text.split("\n") for i in range(0, max(len(line), 1), width)]
    return "\n".join(rows).encode("utf-8", errors="surrogateescape")


@pytest.mark.parametrize(("path", "width"), LOGS)
def test_a_hard_wrap_keeps_the_verdict(path: Path, width: int):
    data = path.read_bytes()
    assert verdict_of(hard_wrapped(data, width)) == verdict_of(data)
