"""Each rule fires on a real log that shows its problem and stays quiet on a near miss."""

from __future__ import annotations

import re
import sys
import textwrap

import pytest
from conftest import FIXTURES, ROOT, analyze_fixture, tiered

from advisor.fast import scan
from advisor.rules.expressions import evaluate
from advisor.rules.match import Match, context_for, match_run, without_superseded
from advisor.rules.remedies import DERIVED_NAMES
from advisor.rules.schema import VOCABULARY, RuleSetError, load_metric_rules, load_rules
from advisor.timeline.runs import split_runs

# rule code: (a fixture it must fire on, a near-miss fixture it must not fire on)


CASES = [(rule.code, case) for rule in load_rules() for case in rule.cases]


@pytest.mark.parametrize("code,case", CASES, ids=[f"{code}-{case.log.rstrip('-')}" for code, case in CASES])
def test_rule_fires_on_its_logs_only(code, case):
    assert (code in {f.rule for f in analyze_fixture(case.log).findings}) == case.fires, case.note


@pytest.mark.parametrize("rule", load_rules(), ids=lambda rule: rule.code)
def test_every_rule_has_a_log_it_fires_on_and_a_near_miss(rule):
    assert {case.fires for case in rule.cases} == {True, False}


def test_every_failure_word_is_one_a_rule_can_give():
    # The vocabulary (rules/vocabulary/failures.toml) holds no word that no rule names; a rule naming a
    # word the vocabulary lacks is refused at load.
    named = {rule.failure for rule in (*load_rules(), *load_metric_rules())}
    assert set(VOCABULARY) <= named


@pytest.mark.parametrize("path", tiered(sorted(FIXTURES.rglob("*.log"))), ids=lambda p: p.name[:40])
def test_matching_finds_what_judging_every_event_whole_finds(path):
    # match_run remembers outcomes and makes an event's whole context only where it is read: it must
    # find the rules, events and contexts that judging each rule on each event's whole context finds.
    rules = load_rules()
    for run in split_runs(scan.scan_file(str(path))):
        plain: dict[int, Match] = {}
        streaks = dict.fromkeys(range(len(rules)), 0)  # a sustained rule fires on the last of its streak
        for event in run.events:
            for index, rule in enumerate(rules):
                if index not in plain and event.kind in rule.event:
                    context = context_for(run, event)
                    streaks[index] = streaks[index] + 1 if evaluate(rule.when, context) else 0
                    if streaks[index] >= rule.sustained:
                        plain[index] = Match(rule=rule, event=event, context=context)
        expected = without_superseded([plain[index] for index in sorted(plain)])
        found = match_run(run, rules)
        assert [(m.rule.code, m.event.line) for m in found] == [(m.rule.code, m.event.line) for m in expected]
        for got, want in zip(found, expected, strict=True):  # equal, and of the same types: 1 and 1.0 print apart
            assert got.context == want.context
            assert {k: type(v) for k, v in got.context.items()} == {k: type(v) for k, v in want.context.items()}


def test_remediations_never_exceed_the_utilization_ceiling():
    for case in ("001-", "015-", "020-", "022-", "024-", "043-", "067-"):
        for finding in analyze_fixture(case).findings:
            for remediation in finding.remediations:
                value = remediation.flags.get("--gpu-memory-utilization")
                if value is not None:
                    assert float(value) <= 0.95, (case, remediation)


def test_free_memory_advice_never_asks_more_than_free_over_total():
    report = analyze_fixture("024-")  # 31.44 of 47.38 GiB free, 0.95 requested
    top = report.findings[0].remediations[0]
    assert float(top.flags["--gpu-memory-utilization"]) <= 31.44 / 47.38


def test_kv_shortfall_suggests_a_round_length_between_60_and_80_percent_of_the_estimate():
    for case, limit in (("088-", 15488), ("007-", 199552), ("009-", 251136), ("001-", 23648), ("011-", 58496)):
        top = analyze_fixture(case).findings[0].remediations[0]
        length = int(top.flags["--max-model-len"])
        assert 0.6 * limit <= length <= 0.8 * limit and length % 1024 == 0, (case, length)


def test_suggested_tensor_parallel_size_divides_the_heads():
    for case, heads in (("068-", 28), ("070-", 52)):
        size = int(analyze_fixture(case).findings[0].remediations[0].flags["--tensor-parallel-size"])
        assert heads % size == 0


def test_weights_oom_is_not_answered_with_a_utilization_change():
    for finding in analyze_fixture("026-").findings:
        assert all("--gpu-memory-utilization" not in r.flags for r in finding.remediations)


def test_auto_fit_is_offered_only_where_the_version_has_it():
    def titles(case: str) -> list[str]:
        return [r.title for r in analyze_fixture(case).findings[0].remediations]

    assert any("auto" in t for t in titles("088-"))  # vLLM 0.32.0
    assert not any("auto" in t for t in titles("007-"))  # version not in the log


def write_rule(folder, name, body):
    (folder / name).write_text(textwrap.dedent(body))


VALID = """
    code = "S101"
    name = "kv-cache-insufficient"
    phase = "startup"
    severity = "error"
    failure = "kv_cache_insufficient"
    event = ["kv_cache_error"]
    message = ["x"]
    versions = "all"
    detects = "x"
    why = "x"
    fix = "x"
    tradeoffs = "x"
"""


def test_rule_files_reject_unknown_keys(tmp_path):
    write_rule(tmp_path, "S101-kv-cache-insufficient.toml", VALID + 'colour = "red"\n')
    with pytest.raises(RuleSetError, match="colour"):
        load_rules(tmp_path)


def test_rule_files_reject_a_missing_or_empty_page_section(tmp_path):
    write_rule(tmp_path, "S101-kv-cache-insufficient.toml", VALID.replace('fix = "x"', 'fix = ""'))
    with pytest.raises(RuleSetError, match="fix"):
        load_rules(tmp_path)
    write_rule(tmp_path, "S101-kv-cache-insufficient.toml", VALID.replace('tradeoffs = "x"', ""))
    with pytest.raises(RuleSetError, match="tradeoffs"):
        load_rules(tmp_path)


def test_rule_files_reject_duplicate_codes(tmp_path):
    write_rule(tmp_path, "S101-kv-cache-insufficient.toml", VALID)
    again = VALID.replace('name = "kv-cache-insufficient"', 'name = "kv-cache-insufficient-again"')
    write_rule(tmp_path, "S101-kv-cache-insufficient-again.toml", again)
    with pytest.raises(RuleSetError, match="already used"):
        load_rules(tmp_path)


def test_rule_files_reject_unsafe_expressions(tmp_path):
    write_rule(tmp_path, "S101-kv-cache-insufficient.toml", VALID + "when = \"__import__('os').system('true')\"\n")
    with pytest.raises(RuleSetError, match="may be called"):
        load_rules(tmp_path)


def test_rule_files_reject_unknown_failure_words(tmp_path):
    write_rule(tmp_path, "S101-kv-cache-insufficient.toml", VALID.replace("kv_cache_insufficient", "kv_too_small", 1))
    with pytest.raises(RuleSetError):
        load_rules(tmp_path)


def test_readme_rule_table_is_the_rule_files():
    # The table is written from the rule files: a rule added, renamed or regraded shows here first.
    sys.path.insert(0, str(ROOT / "tools"))
    from rule_table import PAGE, with_table

    assert PAGE.read_text() == with_table(PAGE.read_text()), "stale: run python tools/rule_table.py"


def test_derived_names_are_what_arithmetic_derives():
    source = (ROOT / "advisor" / "rules" / "remedies.py").read_text()
    assert set(re.findall(r'out\["([a-z_0-9]+)"\]', source)) == DERIVED_NAMES


def test_a_firing_condition_that_reads_a_derived_name_is_rejected_at_load(tmp_path):
    text = (ROOT / "rules" / "S101-kv-cache-insufficient.toml").read_text()
    (tmp_path / "S101-kv-cache-insufficient.toml").write_text(
        re.sub(r"(?m)^(event = .*)$", r'\1\nwhen = "suggested_max_model_len > 0"', text, count=1)
    )
    with pytest.raises(RuleSetError, match="suggested_max_model_len, which are derived only once the rule fires"):
        load_rules(tmp_path)
