"""Each message wording, parsed from a real line of a fixture into its fact kind and values."""

from __future__ import annotations

import itertools
import json

import pytest
from conftest import FIXTURES, ROOT, analyze_fixture, fixture_line, tiers

from advisor.ingest import sources
from advisor.parse.anchors import AnchorSearch, anchor_regex, find_anchor
from advisor.parse.envelope import split_envelope
from advisor.parse.grammar import parse_line


def grammar_samples() -> list[tuple[str, dict, str, str]]:
    """The checked samples of grammars/*.lark: `// sample KIND {VALUES}` over `//   LINE`, a real log line."""
    samples = []
    for path in sorted((ROOT / "grammars").glob("*.lark")):
        lines = path.read_text().splitlines()
        for head, body in itertools.pairwise(lines):
            if head.startswith("// sample "):
                kind, _, rest = head.removeprefix("// sample ").partition(" ")
                values = json.JSONDecoder().raw_decode(rest)[0]
                samples.append((kind, values, body.removeprefix("//   "), rest))
    return samples


SAMPLES = grammar_samples()


@pytest.mark.parametrize("kind,values,line,note", SAMPLES, ids=[f"{k}-{i}" for i, (k, *_) in enumerate(SAMPLES)])
def test_wording(kind, values, line, note):
    facts = [f for f in parse_line(line, 1) if f.kind == kind]
    assert facts, f"no {kind} in the sample {line!r}"
    assert facts[0].values.items() >= values.items()


def test_every_sample_is_a_real_line():
    # Samples are copied from real logs, never written to pass: each is a line of a fixture.
    real = {line.text for path in FIXTURES.rglob("*.log") for line in sources.lines(sources.read_chunks(str(path)))}
    invented = [line for _, _, line, _ in SAMPLES if line not in real]
    assert not invented, invented


def test_every_message_rule_has_a_real_sample():
    """Each alternative of the grammar's `message` rule (aliases included) has a checked sample."""
    from advisor.parse.grammar import message_parser

    produced = {str(r.alias or r.origin.name) for r in message_parser().rules}
    text = (ROOT / "grammars" / "messages.lark").read_text()
    block = text.split("?message:", 1)[1].split("\n\n", 1)[0]
    alternatives = {name.strip() for name in block.replace("\n", " ").split("|")}
    aliases = {"free_memory": {"free_memory_below_utilization", "memory_summary"}}
    kinds = set().union(*(aliases.get(a, {a}) for a in alternatives)) & produced
    missing = kinds - {kind for kind, *_ in SAMPLES}
    assert not missing, f"wordings without a sample line: {sorted(missing)}"


def test_exception_counts_only_at_the_start_of_the_body():
    # The ulimit warning quotes "OSError: [Errno 24]" mid-sentence: not an exception.
    facts = parse_line(fixture_line("088-", 11), 11)
    assert not [f for f in facts if f.kind == "exception"]


@pytest.mark.parametrize(
    "fixture,number,process,level",
    [
        ("019-", 1, "EngineCore_DP0 pid=223840", "ERROR"),
        ("064-", 1, "RayWorkerWrapper pid=2711, ip=████████████", "INFO"),
        ("065-", 1, "VllmWorker rank=3 pid=1090", "ERROR"),
        ("081-", 5, "[rank0]", None),
        ("011-", 3, None, "ERROR"),  # old era: "ERROR 02-07 11:28:26 engine.py:389]"
        ("040-", 1, None, "WARNING"),  # docs example without "]"
    ],
)
def test_envelope(fixture, number, process, level):
    envelope = split_envelope(fixture_line(fixture, number))
    assert (envelope.process, envelope.level) == (process, level)


def long_texts(logs) -> list[str]:
    """Every real line of the logs, and each run into a long one: real lines, each followed by prose
    full of anchor words that are not anchors, as in a long prompt that quotes code."""
    lines = [line.text for path in logs for line in sources.lines(sources.read_chunks(str(path)))]
    prose = "an Error here, the Exception there, Engine 7 was fine, Shutting, File, blocks and words " * 15
    return lines + [prose + line + prose for line in lines[::25]]


@pytest.mark.parametrize("logs", tiers(sorted(FIXTURES.rglob("*.log"))))
def test_find_anchor_is_the_anchor_regex_search(logs):
    # find_anchor is an optimisation of anchor_regex().search: same match at every start place.
    for text in long_texts(logs):
        search = AnchorSearch(text)  # one search, asked from ever later places, as messages() asks it
        for position in sorted({0, 1, len(text) // 3, len(text) // 2, max(len(text) - 40, 0)}):
            plain = anchor_regex().search(text, position)
            for fast in (find_anchor(text, position), search.find(position)):
                assert (fast and (fast.start, fast.name)) == (plain and (plain.start(), plain.lastgroup)), text[:120]


@pytest.mark.parametrize("width", [60, 80, 100, 120, 133, 160, 200])
def test_a_message_hard_wrapped_by_a_terminal_is_read_whole(width):
    # The real KV shortfall of 088 (543 characters behind its process prefix), wrapped at the width
    # as a terminal does, mid-word: the anchor "max seq len (" and the estimate 15488 fall apart.
    from advisor.ingest.sources import Line
    from advisor.parse.continuation import continued_facts

    text = fixture_line("088-", 89)
    rows = [Line(n + 1, text[i : i + width]) for n, i in enumerate(range(0, len(text), width))]
    facts = [f for f in continued_facts(rows, parse_line) if f.kind == "kv_cache_error"]
    assert [f.values for f in facts] == [
        {"max_seq_len": 32768, "kv_needed_gib": 0.01, "kv_available_gib": 0.0, "estimated_max_model_len": 15488}
    ]


@pytest.mark.parametrize(
    ("log", "line", "kind", "read", "left_out"),
    [
        # vLLM 0.9.1's non-default args hold a LoRAModulePath(...): not a literal, left out; the rest is read.
        ("16073-", 3, "non_default_args", {"max_model_len": 4096, "gpu_memory_utilization": 0.8}, "lora_modules"),
        # vLLM 0.8's Namespace(...) holds an enum repr, "<ConfigFormat.AUTO: 'auto'>": no expression until replaced.
        ("16014-", 3, "namespace_args", {"max_model_len": 512, "gpu_memory_utilization": 0.5}, "config_format"),
    ],
)
def test_launch_arguments_are_read_around_values_that_are_no_literal(log, line, kind, read, left_out):
    fact = next(f for f in parse_line(fixture_line(log, line), line) if f.kind == kind)
    assert {name: fact.args.get(name) for name in read} == read and left_out not in fact.args


def test_an_error_record_in_words_the_grammar_does_not_know_is_one_and_its_traceback_lines_are_not():
    # V1's worker loop logs "WorkerProc hit an exception." before the traceback it prints; every line of
    # that traceback carries the same ERROR envelope, indented after it.
    said = parse_line(fixture_line("18110-", 4), 4)
    assert [(f.kind, f.text["message"]) for f in said] == [("error_record", "WorkerProc hit an exception.")]
    assert parse_line(fixture_line("5036-", 2), 2) == []  # "    super().__init__(" of a logged traceback


def test_a_log_that_ends_in_an_error_record_is_never_healthy():
    # A prefill worker's exception, cut after its first words: whatever the stage, not a healthy end.
    assert analyze_fixture("18110-").verdict.phase != "healthy"


def test_a_message_wrapped_at_a_word_and_indented_by_the_paste_is_read_on():
    # A docs page's admonition: the ValueError wrapped by its author, both lines indented four spaces.
    from advisor.ingest.sources import Line
    from advisor.parse.continuation import continued_facts

    rows = [Line(n, fixture_line("18308-", n)) for n in (1, 2)]
    facts = [f for f in continued_facts(rows, parse_line) if f.kind == "free_memory_below_utilization"]
    assert [f.values for f in facts] == [
        {"free_gpu_gib": 14.45, "total_gpu_gib": 122.82, "gpu_memory_utilization": 0.7, "requested_gib": 85.98}
    ]
