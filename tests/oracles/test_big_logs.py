"""Big logs: two processes, compact facts and the written report give the plain path's results.

The tests on generated logs of megabytes run under -m exhaustive (.ci/run); those on the fixtures, every time.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import subprocess
import sys
import tracemalloc
from dataclasses import asdict

import pytest
from conftest import FIXTURES, ROOT, tiered

from advisor import pipeline
from advisor.cli import main
from advisor.fast import background, scan, templates, tree_cache
from advisor.fast.templates import FactTemplates
from advisor.ingest import sources
from advisor.parse.anchors import anchor_regex
from advisor.parse.grammar import parse_line
from advisor.pipeline import Analysis
from advisor.report.build import analyze, event_facts, parse
from advisor.report.contract import EventOut
from advisor.report.formats import FORMATS, json_format, render
from advisor.report.writer import event_json
from advisor.rules.condition import Condition
from advisor.rules.expressions import FUNCTIONS, compile_expression, evaluate
from advisor.timeline.kinds import TRACEBACK_KINDS

sys.path.insert(0, str(ROOT / "tools/bench"))
from generate_log import generate

LOGS = sorted(FIXTURES.rglob("*.log"))


@pytest.fixture(scope="module")
def generated_log(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("big") / "generated.log", 3 << 20)


def plain_facts(path):
    return parse(sources.lines(sources.read_chunks(str(path))))


@pytest.fixture(scope="module")
def generated_facts(generated_log):
    return plain_facts(generated_log)


@pytest.fixture(scope="module")
def generated_report(generated_log):
    return analyze(sources.lines(sources.read_chunks(str(generated_log))), "generated.log")


def split_in(parts: int, monkeypatch) -> None:
    """Make scan_file cut any file into this many parts, whatever the cores and the size."""
    monkeypatch.setattr(scan, "PART_MIN", 1)
    monkeypatch.setattr(scan, "usable_cores", lambda: parts)


@pytest.fixture
def always_split(monkeypatch):
    split_in(2, monkeypatch)


@pytest.mark.exhaustive
@pytest.mark.parametrize("parts", [2, 3, 7])
def test_parts_give_the_facts_of_one_pass(generated_log, generated_facts, parts, monkeypatch):
    split_in(parts, monkeypatch)
    assert scan.scan_file(str(generated_log)) == generated_facts


@pytest.mark.parametrize("path", tiered(LOGS), ids=lambda p: p.name[:40])
def test_parts_of_every_fixture(path, monkeypatch):
    # Small files cut anywhere: in a traceback, a CR-redrawn progress bar, a journald record; some parts empty.
    split_in(5, monkeypatch)
    assert scan.scan_file(str(path)) == plain_facts(path)


@pytest.mark.exhaustive
def test_a_part_process_that_dies_is_one_line_error(generated_log, monkeypatch, capsys):
    split_in(2, monkeypatch)
    monkeypatch.setattr(scan, "_scan_part", lambda *args: os._exit(9))  # as if the OOM killer struck
    assert main(["--format", "json", str(generated_log)]) == 2
    captured = capsys.readouterr()
    assert (
        captured.out == ""
        and captured.err == f"vllm-advisor: {generated_log}: a process working on part of the analysis died\n"
    )


@pytest.mark.exhaustive
def test_gzip_and_small_files_use_one_process(generated_log, generated_facts, tmp_path, monkeypatch):
    packed = tmp_path / "generated.log.gz"
    packed.write_bytes(gzip.compress(generated_log.read_bytes()))
    split_in(2, monkeypatch)
    monkeypatch.setattr(scan.background, "start", None)  # any attempt to fork fails
    assert scan.scan_file(str(packed)) == generated_facts
    monkeypatch.setattr(scan, "PART_MIN", 1 << 40)
    assert scan.scan_file(str(generated_log)) == generated_facts


@pytest.mark.exhaustive
def test_an_error_in_a_part_reaches_the_caller(generated_log, monkeypatch):
    split_in(3, monkeypatch)
    scan_lines = scan._scan_lines

    def broken_after_the_first_part(chunks, engine, prefix, lookahead):
        chunks = iter(chunks)
        first = next(chunks)
        if first[: len(head)] != head:
            raise ValueError("a later part")
        return scan_lines([first, *chunks], engine, prefix, lookahead)

    head = generated_log.read_bytes()[:100]
    monkeypatch.setattr(scan, "_scan_lines", broken_after_the_first_part)
    with pytest.raises(ValueError, match="a later part"):
        scan.scan_file(str(generated_log))


@pytest.mark.exhaustive
def test_cli_json_is_the_plain_report(generated_log, always_split, capsys):
    assert main(["--format", "json", str(generated_log)]) == 1  # the generated log ends in a failure
    plain = analyze(sources.lines(sources.read_chunks(str(generated_log))), str(generated_log))
    assert capsys.readouterr().out == plain.to_json() + "\n"


@pytest.fixture
def events_in_background(monkeypatch):
    monkeypatch.setattr(pipeline, "BACKGROUND_MIN", 1)


def written_json(analysis: Analysis, tmp_path) -> str:
    # A real file: a forked process writes to a descriptor, not into this process's memory.
    with open(tmp_path / "report.json", "w+", encoding="utf-8") as stream:
        analysis.write_json(stream)
        stream.seek(0)
        return stream.read()


@pytest.mark.parametrize("path", tiered(LOGS), ids=lambda p: p.name[:40])
def test_events_written_by_a_forked_process(path, events_in_background, tmp_path):
    analysis = Analysis(plain_facts(path), path.name)
    plain = analyze(sources.lines(sources.read_chunks(str(path))), path.name)
    assert written_json(analysis, tmp_path) == plain.to_json()
    assert analysis.report() == plain and analysis.report().to_json() == plain.to_json()


@pytest.fixture(scope="module")
def log_of_many_events(tmp_path_factory):
    """A log with more events than BACKGROUND_MIN, so that the real command writes them from a forked process."""
    path = generate(tmp_path_factory.mktemp("many") / "many-events.log", 150 << 20)
    events = sum(1 for f in scan.scan_file(str(path)) if f.kind not in TRACEBACK_KINDS)
    assert events > pipeline.BACKGROUND_MIN
    return path


@pytest.mark.exhaustive
def test_cli_json_of_two_big_logs_is_the_same_array(log_of_many_events):
    done = subprocess.run(
        [sys.executable, "-m", "advisor", "--format", "json", str(log_of_many_events), str(log_of_many_events)],
        capture_output=True,
        check=False,
    )
    report = json_format.render([Analysis(scan.scan_file(str(log_of_many_events)), str(log_of_many_events)).report()])
    assert done.returncode == 1 and done.stderr == b""
    assert done.stdout.decode() == "[\n" + report[:-1] + ",\n" + report[:-1] + "\n]\n"


@pytest.mark.exhaustive
def test_reader_that_leaves_a_big_report_is_silent(log_of_many_events):
    # `vllm-advisor big.log | head -c 10`: the forked writer meets the closed pipe; the command says nothing.
    child = subprocess.Popen(
        [sys.executable, "-m", "advisor", "--format", "json", str(log_of_many_events)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout.read(10) == b'{\n  "schem'
    child.stdout.close()
    assert child.wait(timeout=120) in (0, 1) and child.stderr.read() == b""


@pytest.mark.exhaustive
def test_a_writer_process_that_dies_is_one_line_error(generated_log, events_in_background, monkeypatch, tmp_path):
    monkeypatch.setattr(pipeline, "_write_all", lambda *args: os._exit(9))
    with open(tmp_path / "out", "w", encoding="utf-8") as stream, pytest.raises(background.ProcessDied):
        Analysis(plain_facts(generated_log), "generated.log").write_json(stream)


@pytest.mark.exhaustive
def test_several_reports_make_the_same_array(generated_log):
    path = next(FIXTURES.glob("corpus/091-*.log"))
    fast = [Analysis(scan.scan_file(str(p)), p.name) for p in (path, generated_log)]
    plain = [analyze(sources.lines(sources.read_chunks(str(p))), p.name) for p in (path, generated_log)]
    written = io.StringIO()
    json_format.write(fast, written)
    assert written.getvalue() == json_format.render(plain)


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"a": 1},
        {"a": 0.0, "b": -0.0, "c": 1e-4, "d": 9.99e-5, "e": 1e-7, "f": 1e15, "g": 1e16, "h": 1e17},
        {"inf": float("inf"), "nan": float("nan")},
        {"big": 10**20, "neg": -3, "third": 1 / 3},
        {"caf\u00e9_value": 1.5},
        {'quote"d': 2},
        {"tab\tname": 3},
    ],
    ids=str,
)
def test_event_text_is_jsons(values):
    # The fast template and json.dumps write an event alike; inf and nan, which JSON lacks, as null.
    finite = {name: value if value - value == 0 else None for name, value in values.items()}
    expected = "    " + json.dumps({"line": 7, "kind": "stats", "values": finite}, indent=2, ensure_ascii=False)
    event = EventOut(line=7, kind="stats", values=values)
    assert event_json(event) == expected.replace("\n", "\n    ")
    assert json.loads(event_json(event)) == {"line": 7, "kind": "stats", "values": finite}


@pytest.mark.exhaustive
def test_the_fast_path_s_report_is_the_plain_report(generated_log, generated_report):
    report = Analysis(scan.scan_file(str(generated_log)), "generated.log").report()
    assert type(report) is type(generated_report) and report == generated_report
    assert report.to_json() == generated_report.to_json()
    assert json.loads(report.to_json()) == json.loads(json.dumps(asdict(report)))


@pytest.mark.exhaustive
def test_stats_facts_share_their_shape_and_pickle(generated_log):
    facts = scan.scan_file(str(generated_log))
    stats = [fact for fact in facts if fact.kind == "stats"]
    # Read by recipes: the facts of one line shape hold the same names and words, not copies
    # (the generated log mixes a few shapes of stats line).
    shapes = len(stats) // 4
    assert len(stats) > 100 and len({id(fact.names) for fact in stats}) <= shapes
    assert len({id(fact.text) for fact in stats}) <= shapes
    back = pickle.loads(pickle.dumps(stats))
    assert back == stats and len({id(fact.names) for fact in back}) <= shapes


@pytest.mark.exhaustive
def test_memory_per_stats_line_stays_small(tmp_path):
    # What makes a 4 GB log (176,000 stats lines) fit in 200 MB: a stats line kept for the JSON report
    # costs about 300 bytes (plus the one-time caches and free lists counted here); as pydantic
    # facts and events it cost about 2,700. The JSON report writes its events from the facts.
    log = generate(tmp_path / "24M.log", 24 << 20)
    scan.scan_file(str(log))  # grammars, rules and matcher loaded outside the measure
    tracemalloc.start()
    try:
        facts = scan.scan_file(str(log))
        Analysis(facts, "log").diagnosis()
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    stats = sum(fact.kind == "stats" for fact in facts)
    assert stats > 1000 and size / stats < 1000, (size, stats)
    assert len(event_facts(facts)) > stats


def test_a_condition_reads_the_own_names_over_the_run_s():
    condition = Condition("running_reqs < max_num_seqs", {"max_num_seqs": 4, "unread": 1})
    assert condition({"running_reqs": 3}) is True
    assert condition({"running_reqs": 3, "max_num_seqs": 2}) is False  # own over run
    assert condition({"running_reqs": 3, "max_num_seqs": None}) is False  # own over run, even None
    assert condition({"running_reqs": 5}) is False
    assert condition({}) is False  # an unknown name is None


@pytest.mark.parametrize(
    "source",
    [
        "str(running_reqs) == '1' and 'stats' in kinds",
        "x if running_reqs > 1 else -x",
        "max(running_reqs, 2) * 3 // 2 or not kinds",
        "running_reqs / x > 0.5 and [1, x] != [1, 2]",
        "round(abs(-x), 1) in [0.5, 2, -0.0]",
    ],
)
def test_compiled_expressions_evaluate_as_the_tree_reads(source):
    # The closures equal the expression's meaning: Python's own evaluation of the same tree, where no
    # name is None (None is the rule language's own: no arithmetic on it, comparisons false).
    for names in ({"running_reqs": 1, "kinds": ["stats"], "x": 2.0}, {"running_reqs": 3.0, "kinds": [], "x": -0.5}):
        expected = eval(compile(compile_expression(source), "<rule>", "eval"), {"__builtins__": FUNCTIONS}, names)
        assert evaluate(source, names) == expected


def test_recipe_facts_equal_parsed_facts():
    line = (
        "(APIServer pid=12646) INFO 11-01 00:00:20 [loggers.py:335] Engine 001: Avg prompt throughput: "
        "105.8 tokens/s, Avg generation throughput: 1314.6 tokens/s, Running: 5 reqs, Waiting: 6 reqs, "
        "GPU KV cache usage: 59.3%, Prefix cache hit rate: 55.3%"
    )
    learned = FactTemplates()
    learned.parse_line(line, 1)
    learned.parse_line(line, 2)  # a shape is learned when it comes again
    assert any(learned.recipes.values())
    other = line.replace("105.8", "917.2").replace("pid=12646", "pid=99999")
    assert learned.parse_line(other, 9) == parse(sources.text_lines("\n" * 8 + other))


@pytest.mark.parametrize("path", tiered(LOGS), ids=lambda p: p.name[:40])
def test_one_probe_learns_what_a_probe_per_number_learns(path):
    # The quick way to learn a template must agree with the careful one wherever it gives an answer.
    learned = FactTemplates()
    for line in {line.text: line for line in sources.lines(sources.read_chunks(str(path)))}.values():
        if not anchor_regex().search(line.text) or tree_cache.BYPASS.search(line.text):
            continue
        facts = parse_line(line.text, 0, learned.trees.parse)
        spans = [span.span() for span in templates.NUMBER_SPAN.finditer(line.text)]
        quick = templates._learn_at_once(line.text, facts, spans, learned.trees.parse)
        if quick is not None:
            careful = learned._learn_one_by_one(line.text, facts, spans)
            assert careful is not None, line.text
            assert (quick.plans, quick.process_spans) == (careful.plans, careful.process_spans), line.text


@pytest.mark.exhaustive
@pytest.mark.parametrize("output", sorted(FORMATS))
def test_every_format_of_the_fast_path_s_report_is_the_plain_one(generated_log, generated_report, output):
    report = Analysis(scan.scan_file(str(generated_log)), "generated.log").report()
    assert render(output, [report]) == render(output, [generated_report])


@pytest.mark.parametrize("tail", [b"", b"\n", b"\r\n", b"\n\n\n"])
@pytest.mark.parametrize("parts", [2, 3])
def test_odd_shapes_split_like_one_pass(tmp_path, monkeypatch, tail, parts):
    # A line longer than MAX_LINE (anchors before and after the cut) across the middle, bare CRs,
    # blank lines, and no newline at the end.
    stats = next(FIXTURES.glob("corpus/091-*.log")).read_bytes()
    long_line = b"x" * 1000 + b" CUDA out of memory. " + b"y" * (sources.MAX_LINE + 5000) + b"Traceback"
    data = stats + long_line + b"\n" + b"progress\rINFO: Shutting down\r\n" * 50 + b"\n" * 10 + stats
    log = tmp_path / "odd.log"
    log.write_bytes(data.rstrip(b"\r\n") + tail)
    split_in(parts, monkeypatch)
    assert scan.scan_file(str(log)) == plain_facts(log)


def test_empty_file(tmp_path, always_split):
    log = tmp_path / "empty.log"
    log.write_bytes(b"")
    assert scan.scan_file(str(log)) == []
