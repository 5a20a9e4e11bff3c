"""The run at a glance: sparklines from real stats lines, findings marked, 80 columns."""

from __future__ import annotations

import pytest
from conftest import analyze_fixture, corpus_cases

from advisor.report.formats import render, sparklines
from advisor.report.formats.sparklines import BARS, MARK

IDS = [case["id"] for case in corpus_cases()]


def test_091_kv_usage_peaks_where_preemption_is_marked():
    report = analyze_fixture("091")
    timeline = sparklines.lines(report)
    stats = sparklines.stats_events(report)
    kv_row = next(line for line in timeline if line.lstrip().startswith("KV cache"))
    mark_row = next(line for line in timeline if line.strip() == MARK)
    start = len("  ") + sparklines.LABEL_WIDTH + 1
    bars = kv_row[start : start + len(stats)]
    peak = max(range(len(stats)), key=lambda i: stats[i].values["kv_cache_usage_pct"])
    assert bars[peak] == BARS[-1] and stats[peak].values["kv_cache_usage_pct"] == 95.5
    # R103 rests on the stats line at 95.5%: the mark sits under that column.
    assert mark_row.index(MARK) - start == peak
    assert f"{MARK} line 120: R103 preemption-inferred (preemption)" in "\n".join(timeline)


def test_idle_moments_use_the_lowest_bar_only():
    report = analyze_fixture("091")
    stats = sparklines.stats_events(report)
    waiting = [e.values["waiting_reqs"] for e in stats]
    line = sparklines.sparkline(waiting, max(waiting))
    assert [bar == BARS[0] for bar in line] == [value == 0 for value in waiting]


def test_long_runs_are_bucketed_to_fit():
    stats = sparklines.stats_events(analyze_fixture("091"))
    many = stats * 20
    buckets = sparklines.bucketed(many)
    assert len(buckets) == sparklines.MAX_COLUMNS
    assert sum(len(bucket) for bucket in buckets) == len(many)


def test_startup_logs_have_no_timeline():
    assert sparklines.lines(analyze_fixture("088")) == []


@pytest.mark.parametrize("name", IDS)
def test_text_fits_80_columns(name):
    lines = render("text", [analyze_fixture(name)]).splitlines()
    # The corrected command is printed whole, on the line after its heading, so it can be copied; so
    # is the log's own name in the heading.
    whole = {i + 1 for i, line in enumerate(lines) if line.startswith("Corrected command")}
    whole |= {i for i, line in enumerate(lines) if line.startswith("vllm-advisor: ")}
    assert all(len(line) <= 80 for i, line in enumerate(lines) if i not in whole)
