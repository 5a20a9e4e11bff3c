"""Each metric rule on a real dump it must fire on and a near miss (its file's cases), and the
captured dumps of five releases judged as what they were."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from conftest import FIXTURES
from helpers.metric_dumps import snapshot_of

from advisor.rules.condition import names_read
from advisor.rules.schema import MetricCase, load_metric_rules
from advisor.scrape.fetch import Body, read
from advisor.scrape.figures import figures
from advisor.scrape.join import join
from advisor.scrape.poll import Comparison
from advisor.scrape.rules import judge
from advisor.scrape.snapshot import parse

CASES = [(rule.code, case) for rule in load_metric_rules() for case in rule.cases]
DUMPS = sorted((FIXTURES / "live").rglob("*.metrics.txt"))


def fired(case: MetricCase) -> set[str]:
    if case.previous is not None:  # follow's comparison of two polls
        comparison = Comparison("poll")
        comparison.take(snapshot_of(case.previous, case.previous_set, ago=case.seconds or 0), 0)
        return {item.finding.rule for item in comparison.take(snapshot_of(case.dumps[0], case.set), 0)}
    snapshots = [
        snapshot_of(dump, case.set if case.set_on in (None, index) else None, case.observe)
        for index, dump in enumerate(case.dumps)
    ]
    return {f.rule for f in join(None, None, snapshots, []).findings}


@pytest.mark.parametrize(("code", "case"), CASES, ids=lambda c: c if isinstance(c, str) else str(c.fires))
def test_metric_rule_fires_or_not(code, case):
    assert (code in fired(case)) == case.fires


def test_every_metric_rule_has_a_firing_case_and_a_near_miss():
    codes = {rule.code for rule in load_metric_rules()}
    assert len(codes) >= 10
    assert {(code, c.fires) for code, c in CASES} == {(code, f) for code in codes for f in (True, False)}


def test_the_preemption_flag_comes_from_the_servers_own_numbers():
    report = join(None, None, [snapshot_of("live/v0.29.0/preemption.metrics.txt")], [])
    top = report.findings[0]
    assert (top.rule, top.evidence, report.verdict.failure) == ("M101", "metrics", "preemption")
    # 5,760 KV tokens (cache_config_info) / (137 prompt + 3,000 output tokens per mean request) = 1.
    assert top.remediations[0].flags == {"--max-num-seqs": "1"}
    assert "5,760 KV tokens / 3,137 tokens per mean request = 1" in top.remediations[0].why
    assert (report.command.corrected, report.command.change_args) == (None, "--max-num-seqs 1")
    assert report.metrics.bottleneck.startswith("KV cache capacity")


@pytest.mark.parametrize("dump", DUMPS, ids=lambda p: str(p.relative_to(FIXTURES / "live")))
def test_captured_dump_judged_alone_as_it_was_captured(dump):
    side = json.loads(dump.with_name(dump.name.replace(".metrics.txt", ".json")).read_text())
    report = join(None, None, [parse(read(str(dump)))], [])
    values = report.metrics.read[0].values
    assert values["preemptions"] == side["preemptions"] if "preemptions" in side else True
    assert values["kv_cache_tokens"] > 0 and values["finished"] >= 1 and values["ttft_count"] >= 1
    if dump.name.startswith("preemption"):
        assert report.verdict.failure == "preemption" and report.findings[0].rule == "M101"
    else:  # healthy runs, the one with its cache full for a while too: no warning from the metrics
        assert (report.verdict.phase, report.verdict.failure) == ("healthy", "none")
        assert all(f.severity == "info" for f in report.findings), [f.rule for f in report.findings]


def test_the_rules_command_lists_the_metric_rules_too(capsys):
    from advisor.cli import main
    from advisor.rules.schema import load_metric_rules, load_rules

    assert main(["rules"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [rule.code for rule in (*load_rules(), *load_metric_rules())]


def test_a_poll_before_leaves_only_the_interval_s_latencies():
    # The same real dump read twice: nothing was observed in between, so no queue time is the interval's,
    # where the lifetime histogram alone would still show every request's wait since the server started.
    dump = parse(read(str(FIXTURES / "live" / "v0.29.0" / "preemption.metrics.txt")))
    alone, polled = figures(dump), figures(dump, previous=dump)
    assert alone["queue_time_count"] > 0 and "queue_time_p95_s" in alone
    assert "queue_time_p95_s" not in polled and polled["preemptions"] == 0


# The figures that are rates: a count over a time.
RATES = ("generation_tok_s",)
DUMPS = sorted((FIXTURES / "live").rglob("*.metrics.txt"))


@pytest.mark.parametrize("rule", load_metric_rules(), ids=lambda rule: rule.code)
def test_one_scrape_gives_no_rate_for_a_rule_to_read(rule):
    # Every real dump fetched "now", a day after its counters were created: one scrape counts, never divides.
    for path in DUMPS:
        body = read(str(path))
        snapshot = parse(Body(body.text, "http://127.0.0.1:8000/metrics", body.read_at + timedelta(days=1), True))
        seen = figures(snapshot)
        assert not set(RATES) & set(seen), path.name
        if set(RATES) & set(names_read(rule.when)):
            assert rule.code not in [fired.code for fired, _ in judge(seen, rule.scope)], path.name
