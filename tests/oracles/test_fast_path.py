"""The fast path (advisor.fast.scan) gives the same JSON report as the plain path, byte for byte."""

from __future__ import annotations

import importlib.util
import re
import sys

import pytest
from conftest import FIXTURES, ROOT, tiered

from advisor.fast import prefilter, scan, templates, tree_cache
from advisor.ingest import sources, unwrap
from advisor.parse import parsers
from advisor.parse.anchors import anchor_regex
from advisor.parse.grammar import parse_line
from advisor.parse.parsers import envelope_parser, message_parser
from advisor.pipeline import Analysis
from advisor.report.build import analyze, parse

sys.path.insert(0, str(ROOT / "tools/bench"))
from generate_log import generate

LOGS = sorted(FIXTURES.rglob("*.log"))
INSTALLED = {
    name
    for name, module in (("hyperscan", "hyperscan"), ("ahocorasick", "ahocorasick_rs"))
    if importlib.util.find_spec(module) is not None
}
ENGINES = ["find"] + [
    pytest.param(name, marks=pytest.mark.skipif(name not in INSTALLED, reason=f"{name} not installed"))
    for name in ("hyperscan", "ahocorasick")
]


def plain_json(path) -> str:
    return analyze(sources.lines(sources.read_chunks(str(path))), path.name).to_json()


def fast_json(path, engine: str) -> str:
    return Analysis(scan.scan_chunks(sources.read_chunks(str(path)), engine), path.name).report().to_json()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", tiered(LOGS), ids=lambda p: p.name[:40])
def test_fast_report_equals_plain_report(path, engine):
    assert fast_json(path, engine) == plain_json(path)


@pytest.mark.parametrize("engine", ENGINES)
def test_lines_across_block_boundaries(monkeypatch, engine):
    # Tiny blocks cut lines everywhere: the carried-over tails must keep numbers and text right.
    path = next(FIXTURES.glob("corpus/089-*.log"))
    monkeypatch.setattr(scan, "BLOCK", 997)
    chunks = sources.read_chunks(str(path))
    small = (chunk[i : i + 300] for chunk in chunks for i in range(0, len(chunk), 300))
    assert Analysis(scan.scan_chunks(small, engine), path.name).report().to_json() == plain_json(path)


def test_a_cut_message_is_read_on_across_every_block_boundary(monkeypatch):
    # A message hard-wrapped over three lines: wherever a block ends, its first line waits for the others.
    path = next(FIXTURES.glob("corpus/025-*.log"))
    data = path.read_bytes()
    plain = plain_json(path)
    assert '"free_memory_below_utilization"' in plain
    for size in range(1, len(data) + 2):
        monkeypatch.setattr(scan, "BLOCK", size)
        pieces = [data[i : i + size] for i in range(0, len(data), size)]
        assert Analysis(scan.scan_chunks(pieces, "find"), path.name).report().to_json() == plain, size


@pytest.fixture(scope="module")
def generated_log(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("bench") / "generated.log", 5 << 20)


@pytest.mark.exhaustive
def test_generated_log_same_report_with_every_engine(generated_log):
    plain = plain_json(generated_log)
    assert '"failure": "engine_dead"' in plain  # the failure near the end was found
    for engine in ["find", *INSTALLED]:
        assert fast_json(generated_log, engine) == plain, engine


def test_every_regex_anchor_has_literals():
    regex_anchors = {t.name for t in message_parser().terminals if t.name.startswith("A_") and t.pattern.type == "re"}
    assert regex_anchors == set(parsers.terminal_notes("literals"))


@pytest.mark.parametrize("path", tiered(LOGS), ids=lambda p: p.name[:40])
def test_every_anchored_line_holds_a_literal(path):
    # The prefilter's promise, checked on real lines: an anchor in the cleaned text means a literal in the raw bytes.
    raw_lines = path.read_bytes().split(b"\n")
    literals = prefilter.anchor_literals()
    for line in sources.lines(sources.read_chunks(str(path))):
        if anchor_regex().search(line.text):
            raw = raw_lines[line.number - 1]
            assert any(literal in raw for literal in literals), (line.number, line.text)


def test_coloured_line_is_a_candidate():
    # No real log in fixtures/ has colour codes inside an anchor, so this line is made up:
    # the code hides the literal from the raw bytes; the ESC byte alone makes the line a candidate.
    coloured = b"INFO 11-29 10:00:00 [worker.py:1] CUDA \x1b[1mout of memory.\x1b[0m Tried to allocate 2.00 GiB\n"
    plain = parse(sources.lines([coloured]))
    assert plain and scan.scan_chunks([coloured], "find") == plain


def digit_sensitive_terminals() -> set[str]:
    """Terminals whose pattern holds a digit outside \\d, a {m,n} count or a \\xHH escape."""
    found = set()
    for parser in (message_parser(), envelope_parser()):
        for terminal in parser.terminals:
            pattern = re.sub(r"\\d|\{\d+(?:,\d*)?\}|\\x[0-9a-fA-F]{2}", "", terminal.pattern.to_regexp())
            if re.search(r"[0-9]", pattern):
                found.add(terminal.name)
    return found


def test_digit_sensitive_terminals_are_bypassed():
    assert digit_sensitive_terminals() == set(tree_cache.DIGIT_SENSITIVE)


def test_wrappers_treat_all_digits_alike():
    # sources.stripped_prefix relies on it: lines that differ only in digits lose prefixes of one length.
    # A digit outside \d and {m,n} counts (a literal, a class, a range's end, an escape) may not.
    for name, wrapper in unwrap.WRAPPERS.items():
        assert not re.search(r"[0-9]", re.sub(r"\\d|\{\d+(?:,\d*)?\}", "", wrapper.pattern)), name


def shifted_digits(text: str) -> str:
    return text.translate(str.maketrans("0123456789", "3456789012"))


@pytest.mark.parametrize("path", tiered(LOGS), ids=lambda p: p.name[:40])
def test_cached_tree_gives_the_facts_of_a_fresh_parse(path):
    # Prime the cache with each real line, then parse the line with other digits in the same places.
    cache = tree_cache.TemplateCache()
    for line in sources.lines(sources.read_chunks(str(path))):
        parse_line(line.text, line.number, cache.parse)
        other = shifted_digits(line.text)
        assert parse_line(other, line.number, cache.parse) == parse_line(other, line.number)


@pytest.mark.parametrize("path", tiered(LOGS), ids=lambda p: p.name[:40])
def test_learned_recipe_gives_the_facts_of_a_fresh_parse(path):
    # Learn each real line's template (on its second sighting), then read a line with other digits in the same places.
    learned = templates.FactTemplates()
    for line in sources.lines(sources.read_chunks(str(path))):
        for _ in range(2):
            assert learned.parse_line(line.text, line.number) == parse_line(line.text, line.number)
        other = shifted_digits(line.text)
        assert learned.parse_line(other, line.number) == parse_line(other, line.number)


@pytest.mark.parametrize("path", tiered(LOGS), ids=lambda p: p.name[:40])
def test_raw_recipe_gives_the_facts_of_the_plain_path(path):
    # Learn each real physical line's shape (on its second sighting), then read a line with other digits
    # in the same places.
    learned = templates.FactTemplates()
    for raw in path.read_bytes().split(b"\n"):
        for line in (raw, raw, shifted_digits(raw.decode("latin-1")).encode("latin-1")):
            read = learned.parse_raw(line, 1)
            if read is not None:
                assert read == [fact for part in sources.line_segments(1, line) for fact in parse_line(part.text, 1)]


def test_stats_lines_are_read_by_recipe():
    # The reason for the recipes: a day of stats lines must not each go through Lark.
    path = next(FIXTURES.glob("corpus/091-*.log"))
    learned = templates.FactTemplates()
    for line in sources.lines(sources.read_chunks(str(path))):
        learned.parse_line(line.text, line.number)
    stats_keys = [key for key in learned.recipes if b"Avg prompt throughput" in key]
    assert stats_keys and all(learned.recipes[key] for key in stats_keys)


@pytest.mark.parametrize(
    "learned_from, value", [("0.0000000", "0.0000001"), ("0999999999999999.9", "9000000000000000.0")]
)
def test_recipe_never_reads_a_value_that_a_fact_drops(learned_from, value):
    # A Fact drops a value too small or too big to be plausible: a recipe learned where the number
    # read a plausible value must not read such a value from a later line of the same shape.
    path = next(FIXTURES.glob("corpus/091-*.log"))
    text = next(line.text for line in sources.lines(sources.read_chunks(str(path))) if "Avg prompt" in line.text)
    start, end = re.search(r"Avg prompt throughput: ([\d.]+)", text).span(1)
    learned = templates.FactTemplates()
    for number in (1, 2):  # a shape is learned when it comes again
        learned.parse_line(text[:start] + learned_from + text[end:], number)
    other = text[:start] + value + text[end:]
    assert learned.parse_line(other, 1) == parse_line(other, 1)
