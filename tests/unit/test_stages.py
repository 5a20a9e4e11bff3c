"""The stage map (advisor/stages.json, from every release's source by tools/stages/extract.py):
what it is built from, how it is built, and that every staged traceback of the corpora agrees with it."""

from __future__ import annotations

import json

import pytest
from conftest import CORPUS, ROOT, WILD, corpus_cases, fixture_path, tool_module

from advisor.ingest import sources
from advisor.report.build import parse
from advisor.timeline import STAGE_BY_FUNCTION, split_runs, stage_from_frames

STAGES = json.loads((ROOT / "advisor" / "stages.json").read_text())
# The stage an out-of-memory label names.
STAGE_OF_FAILURE = {"weights_oom": "model_init", "cuda_graph_oom": "graph_capture", "cuda_oom_runtime": "serving"}
TRACEBACK_ENDS = {"cuda_oom", "cuda_error_oom", "exception", "incomplete_traceback"}


def extract_tool():
    return tool_module("tools/stages/extract.py")


def test_the_map_covers_every_release_and_each_stage():
    placed = STAGES["functions_placed_per_release"]
    assert {"0.1.0", "0.8.5", "0.33.0"} <= set(placed) and len(placed) >= 95
    assert all(STAGE_BY_FUNCTION[stage] for stage in ("model_init", "kv_sizing", "graph_capture", "serving"))
    # An entry point keeps its own stage.
    for stage, entries in STAGES["entry_points"].items():
        assert {"load_weights", "profile_run", "capture_model", "run_busy_loop"} & set(entries) <= STAGE_BY_FUNCTION[
            stage
        ]


def test_a_function_two_stages_reach_belongs_to_neither():
    tool = extract_tool()
    graph = {
        "profile_run": ["execute_model"],  # profiling runs the model's step ...
        "step": ["execute_model", "schedule"],  # ... and so does serving
        "execute_model": ["forward"],
        "forward": [],
        "schedule": [],
        "load_weights": ["weight_loader"],
        "weight_loader": [],
    }
    by_stage, counts = tool.build({"0.0.1": graph})
    assert by_stage["serving"] == ["schedule", "step"]
    assert by_stage["kv_sizing"] == ["profile_run"]
    assert by_stage["model_init"] == ["load_weights", "weight_loader"]
    assert not {"execute_model", "forward"} & {name for names in by_stage.values() for name in names}
    assert counts == {"0.0.1": 5}


def staged_tracebacks():
    for folder in (CORPUS, WILD):
        for case in corpus_cases(folder):
            want = STAGE_OF_FAILURE.get(case["failure"])
            if want and case["accept"] == [case["failure"]]:
                yield pytest.param(case, want, id=case["id"])


@pytest.mark.parametrize(("case", "want"), list(staged_tracebacks()))
def test_staged_tracebacks_of_the_corpora_agree(case, want):
    path = fixture_path(case["file"].split("/")[-1].removesuffix(".log"))
    runs = split_runs(parse(sources.lines(sources.read_chunks(str(path)))))
    staged = [stage_from_frames(e.frames) for run in runs for e in run.events if e.kind in TRACEBACK_ENDS]
    assert all(stage == want for stage in staged if stage), staged
