"""The text report at 80 and 120 columns on each live capture: golden files, and no line past the width,
no continuation line at the margin."""

from __future__ import annotations

import re

import pytest
from conftest import FIXTURES

from advisor.ingest import sources
from advisor.report.build import analyze
from advisor.report.formats import text

LIVE = FIXTURES / "live"
# One capture per side JSON, by its path under fixtures/live (release folders hold the other versions).
CAPTURES = sorted(str(p.relative_to(LIVE).with_suffix("")) for p in LIVE.glob("**/*.json"))

TOP_LEVEL = [name for name in CAPTURES if "/" not in name]
WIDTHS = (80, 120)
# What may start at the margin: the blocks of the report. Anything else there is a wrapped line that lost its indent.
BLOCK_STARTS = re.compile(
    r"(vllm-advisor: |(STARTUP|RUNTIME) FAILURE: |healthy: |no vLLM log lines"
    r"|Numbers from the log$|Run at a glance: |What to change |More on [SRHM]\d+: |Corrected command "
    r"|Change to the launch command |(error|warning|info) line \d+: |─)"
)


def rendered(name: str, width: int) -> str:
    path = LIVE / f"{name}.log"
    return text.render([analyze(sources.lines(sources.read_chunks(str(path))), path.name)], width=width)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", TOP_LEVEL)
def test_text_golden_at_width(name, width, file_regression):
    file_regression.check(rendered(name, width), extension=".txt", basename=f"text_{width}_{name}")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", CAPTURES)
def test_no_line_past_the_width_and_no_continuation_at_the_margin(name, width):
    for line in rendered(name, width).splitlines():
        assert len(line) <= width, line
        assert not line or line.startswith(" ") or BLOCK_STARTS.match(line), f"unindented continuation: {line!r}"
