"""What preemption cost: its spread over the requests from vLLM's per-request histogram, and the recomputed
tokens bracketed, on the recorded series of tools/live/capture_series.py and on a thrashing histogram."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime

from conftest import FIXTURES

from advisor.scrape.fetch import Body
from advisor.scrape.figures import figures
from advisor.scrape.preemption import spread
from advisor.scrape.snapshot import Histogram, parse

SERIES = FIXTURES / "prometheus/preemption-series.jsonl.gz"
INF = float("inf")


def last_scrape():
    with gzip.open(SERIES, "rt") as handle:
        text = [json.loads(line)["text"] for line in handle][-1]
    return parse(Body(text, "series", datetime.now(UTC), fetched=False))


def test_the_recorded_runs_preemptions_were_broad_pressure():
    values = figures(last_scrape())
    # Buckets 1: 4, 2: 5, 3: 8 of 8 requests, 14 preemptions: 1 request twice, 3 three times, 3 once, 1 never.
    assert values["repeatedly_preempted"] == 4
    assert values["preemption_spread"].startswith("4 of the 8 finished requests were preempted more than once")
    assert "(the most preempted 3 times): broad pressure" in values["preemption_spread"]
    # 14 preemptions x 137 prompt tokens, x (137 + 3,000); 1,098 prompt + 24,000 generated tokens computed.
    assert (values["recomputed_min"], values["recomputed_max"]) == (1918, 43918)
    assert values["recomputed_share_min_pct"] == round(100 * 1918 / (25098 + 1918), 1)


def test_one_request_taking_most_preemptions_is_thrashing():
    # 20 finished: 19 at most once (4 of them once), one between 11 and 20 times; 21 preemptions in all.
    buckets = ((1.0, 19.0), (2.0, 19.0), (3.0, 19.0), (4.0, 19.0), (5.0, 19.0), (10.0, 19.0), (20.0, 20.0), (INF, 20.0))
    said = spread(Histogram(buckets, 20.0, 21.0))["preemption_spread"]
    assert said.startswith("1 of the 20 finished requests took at least 11 of the 21 preemptions")
    assert "the most preempted 11 to 20 times" in said and "thrashing" in said


def test_no_preemption_no_spread():
    assert spread(Histogram(((1.0, 5.0), (INF, 5.0)), 5.0, 0.0)) == {}
