"""The stage map (advisor/stages.json, from every release's source by tools/stages/extract.py):
what it is built from, how it is built, and that every staged traceback of the corpora agrees with it."""

from __future__ import annotations

import json

import pytest
from conftest import CORPUS, ROOT, WILD, corpus_cases, fixture_path, tool_module

from advisor.ingest import sources
from advisor.report.build import parse
from advisor.timeline.frames import RAISED_KEY, STAGE_BY_FUNCTION, raised_stage, stage_from_frames
from advisor.timeline.runs import split_runs

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
    by_stage, counts = tool.build({"0.0.1": tool.stages_of_release(graph)})
    assert by_stage["serving"] == ["schedule", "step"]
    assert by_stage["kv_sizing"] == ["profile_run"]
    assert by_stage["model_init"] == ["load_weights", "weight_loader"]
    assert not {"execute_model", "forward"} & {name for names in by_stage.values() for name in names}
    assert counts == {"0.0.1": 5}


def test_an_error_record_s_words_place_it_where_its_function_cannot():
    tool = extract_tool()
    # run_engine_core both builds the engine and runs its busy loop: its function places nothing, but
    # "encountered a fatal error" is its else branch, logged only once the engine was built.
    messages = [
        {
            "call": "logger.exception",
            "function": "run_engine_core",
            "file": "vllm/v1/engine/core.py",
            "lines": [[842, 842]],
            "template": "EngineCore failed to start.",
        },
        {
            "call": "logger.exception",
            "function": "run_engine_core",
            "file": "vllm/v1/engine/core.py",
            "lines": [[844, 844]],
            "template": "EngineCore encountered a fatal error.",
        },
        {
            "call": "logger.info",
            "function": "run_busy_loop",
            "file": "vllm/v1/engine/core.py",
            "lines": [[900, 900]],
            "template": "Idle.",
        },
    ]
    release = tool.stages_of_release({"run_engine_core": [], "run_busy_loop": []})
    assert tool.logged_at({"0.11.1": (release, messages)}, []) == {"core.py:844": "serving"}


def test_an_error_on_the_request_path_is_one_request_s_and_a_parser_answers_no_error():
    tool = extract_tool()
    graph = {"create_chat_completion": ["chat_completion_full_generator"], "chat_completion_full_generator": []}

    def message(call: str, file: str, function: str, line: int, answered: bool = False) -> dict:
        return {"call": call, "file": file, "function": function, "lines": [[line, line]], "answered": answered}

    messages = [
        # the handler goes on with a plain completion: one request's error
        message("logger.error", "vllm/entrypoints/openai/serving_chat.py", "chat_completion_full_generator", 898),
        # a tool parser returns the model's text as content when it cannot parse it: answered, no error sent
        message("logger.exception", "vllm/tool_parsers/hermes_tool_parser.py", "extract_tool_calls", 148, True),
        # the server giving up, and the engine client's own error, are not one request's
        message("logger.critical", "vllm/entrypoints/openai/serving_chat.py", "chat_completion_full_generator", 900),
        message("logger.error", "vllm/v1/engine/async_llm.py", "create_chat_completion", 704),
    ]
    release = {"0.8.5": (tool.stages_of_release(graph), messages)}
    assert tool.one_request_at(release) == ["hermes_tool_parser.py:148", "serving_chat.py:898"]
    assert tool.answered_at({"0.8.5": messages}) == []


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


def test_raised_messages_are_regenerated_from_the_raises_and_the_stage_map():
    raised = tool_module("tools/stages/raised.py")
    document = json.loads((ROOT / "advisor" / "raised.json").read_text())
    assert document["stages"] == raised.raised_in(json.loads(raised.RAISES.read_text()), STAGES["stages"])
    assert all(len(start) >= RAISED_KEY for starts in document["stages"].values() for start in starts)


def test_a_message_raised_in_two_stages_places_neither():
    raised = tool_module("tools/stages/raised.py")
    raises = [
        {"template": "CUDA out of memory occurred when warming up sampler with {n} dummy requests.", "function": "a"},
        {"template": "Cannot use this quantization method here: {name}", "function": "a"},
        {"template": "Cannot use this quantization method here: {name}", "function": "b"},
        {"template": "Too short {x}", "function": "a"},
    ]
    by_stage = raised.raised_in(raises, {"kv_sizing": ["a"], "serving": ["b"]})
    assert by_stage == {"kv_sizing": ["CUDA out of memory occurred when warming up sampler with "], "serving": []}


def raised_exceptions():
    for folder in (CORPUS, WILD):
        for case in corpus_cases(folder):
            if case["phase"] != "healthy":
                path = fixture_path(case["file"].split("/")[-1].removesuffix(".log"))
                facts = parse(sources.lines(sources.read_chunks(str(path))))
                stages = {stage for fact in facts if fact.kind == "exception" and (stage := raised_stage(fact.text))}
                if stages:
                    yield pytest.param(case, stages, id=case["id"])


@pytest.mark.parametrize(("case", "stages"), list(raised_exceptions()))
def test_raised_messages_in_the_corpora_agree_with_their_phase(case, stages):
    assert stages == {"serving"} if case["phase"] == "runtime" else "serving" not in stages, stages


def traceback_stages(prefix: str) -> list[tuple[str, str]]:
    runs = split_runs(parse(sources.lines(sources.read_chunks(str(fixture_path(prefix))))))
    return [(e.phase, e.stage) for run in runs for e in run.events if e.kind in TRACEBACK_ENDS]


def test_a_worker_s_model_step_serves_and_a_model_runner_s_may_be_profiling():
    # 12036: V1's EngineCore fails in gpu_worker.execute_model(scheduler_output), cut above the error:
    # only the engine's step calls a worker's execute_model.
    assert traceback_stages("12036-") == [("runtime", "serving")]
    # 12008: V0's (vllm-ascend's) profile_run calls its model runner's execute_model: still sizing.
    assert ("startup", "kv_sizing") in traceback_stages("12008-")


def test_an_entry_point_of_a_start_up_stage_outranks_a_helper_placed_by_what_reaches_it():
    # 40213: the profiling run (profile_run -> embed_multimodal -> ... -> default_unquantized_gemm) runs
    # out of memory; the map placed the GEMM helper in serving, the only stage it saw reach it.
    assert STAGES["entry_points"]["kv_sizing"].count("profile_run") == 1
    assert "default_unquantized_gemm" in STAGE_BY_FUNCTION["serving"]
    assert set(traceback_stages("40213-")) == {("startup", "kv_sizing")}
    # A serving loop around the start-up entry point keeps it serving: a weight reload while serving.
    assert stage_from_frames(("run_busy_loop", "load_weights", "default_unquantized_gemm")) == "serving"


def test_a_ray_task_s_error_happened_in_the_method_its_header_names():
    # 14096: "RayTaskError(RuntimeError): ray::WorkerDict.actor_rollout_generate_sequences()", then
    # the task's V0 sampler frames, cut: verl's rollout generates on a built engine.
    assert traceback_stages("14096-") == [("runtime", "serving"), ("runtime", "serving")]
