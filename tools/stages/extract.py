"""Build advisor/stages.json: which vLLM functions run only during one stage of start-up, and which
only in the serving loop, read from every release's call graph (tools/wordings harvests it).

    python tools/stages/extract.py            fetch the releases not cached yet, rebuild the map
    python tools/stages/extract.py --offline  rebuild from the cached releases only

For each release, every function reached from a stage's entry points (below) through the calls in
vLLM's own source belongs to that stage; one reached from two stages' entry points (a model's
forward, which profiling and serving both run) belongs to none. A function keeps its stage in the map
when every release that places it agrees. The advisor reads a traceback's frames innermost first, so
an ambiguous frame defers to the frame that called it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "wordings"))

from harvest import CACHE, cached, cached_calls, harvest  # noqa: E402
from sources import releases, version_key  # noqa: E402

STAGES_JSON = ROOT / "advisor" / "stages.json"
# A name called from more functions than this is a utility or a method of many classes (forward,
# get): its calls are not followed (see _specific).
MAX_CALLERS = 20
# How many calls deep from an entry point a function still counts as the stage's: further down,
# the merged names lead everywhere.
MAX_DEPTH = 3
# Names a frame shows that place nothing: a decorator's inner function, defined in many files at once;
# "_", the throwaway name of the functions a decorator registers (torch's fake kernels, overloads), which
# a hard-wrapped frame line also shows when it is cut right after it.
GENERIC_NAMES = {"wrapper", "inner", "wrapped", "_wrapper", "decorator", "func", "fn", "_"}
# Entry points that launch a Triton kernel: placed, not gone through (what they "call" are mostly their
# arguments' names, `sinks`, which name functions elsewhere).
KERNEL_LAUNCHERS = {"context_attention_fwd"}
# Where each stage begins in vLLM's code, by function name (those a release lacks are skipped).
ENTRY_POINTS = {
    "model_init": (
        "load_model",
        "load_weights",
        "init_device",
        "initialize_model",
        "_initialize_model",
        "init_vllm_registered_model",
        "process_weights_after_loading",
        "create_weights",
    ),
    "kv_sizing": (
        "determine_num_available_blocks",
        "determine_available_memory",
        "profile_run",
        "_initialize_kv_caches",
        "initialize_cache",
        "get_kv_cache_config",
        "get_kv_cache_configs",
        "check_enough_kv_cache_memory",
        "raise_if_cache_size_invalid",
        "initialize_from_config",
        "_init_cache",
        "init_cache_engine",
    ),
    "graph_capture": ("capture_model", "_capture_cudagraphs", "capture_begin", "capture_end"),
    # The API server checking its arguments (a chat template named is validated): what serving also
    # calls (a chat template's checks) then places nothing. Not the app's building: the route handlers
    # and exception handlers it defines run while serving.
    "server_start": ("validate_parsed_serve_args",),
    "serving": (
        "step",
        "run_busy_loop",
        "run_engine_loop",
        "engine_step",
        "step_async",
        "_process_engine_step",
        "step_with_batch_queue",
        "output_handler",
        "_run_output_handler",
        "process_output_sockets",
        "process_input_sockets",
        "create_chat_completion",
        "create_completion",
        "create_embedding",
        "chat_completion_stream_generator",
        "completion_stream_generator",
        "_log_task_completion",
        # its name before 0.5 (the background loop's done-callback, which no call reaches)
        "_raise_exception_on_finish",
        "_run_engine",
        # a prefill that continues a request's cached prefix: profiling and capture have none (V0's and the
        # ROCm backends' prefix-prefill kernel too)
        "_continuation_prefill",
        "context_attention_fwd",
        # V0's multi-step scheduling advancing a batch between its steps: profiling and capture run the
        # base model runner's single step
        "_advance_step",
        # V0's tensor-parallel workers loop on the driver's steps, from the first request on
        "start_worker_execution_loop",
        # V1's dump of the scheduler's state when the model step raises
        "log_error_detail",
        "dump_engine_exception",
        # the API server's HTTP middlewares (an --api-key check, the request id), run for each request
        "authentication",
        "add_request_id",
    ),
}


def stages_of_release(graph: dict[str, list[str]]) -> dict[str, set[str]]:
    """{function: the stages that reach it} for the functions of one release that a stage reaches;
    an entry point belongs to its own stage alone, whatever else reaches it (profiling runs the
    model's step too)."""
    reached: dict[str, set[str]] = defaultdict(set)
    callers: Counter[str] = Counter(callee for called in graph.values() for callee in set(called))
    for stage, entries in ENTRY_POINTS.items():
        seen = {name for name in entries if name in graph}
        frontier = [name for name in seen if name not in KERNEL_LAUNCHERS]
        # The serving loop's entry points are reached from start-up, not gone through: what they call
        # runs while serving, and a merged name (the "step" of a helper called while profiling) must
        # not carry a start-up stage into the loop.
        others = set() if stage == "serving" else set(ENTRY_POINTS["serving"])
        for _ in range(MAX_DEPTH):
            frontier = [
                callee
                for name in frontier
                for callee in graph.get(name, ())
                if callee in graph and callee not in seen and not seen.add(callee)  # vLLM's own only
            ]
            frontier = [name for name in frontier if _specific(name, callers) and name not in others]
        for name in seen:
            reached[name].add(stage)
    for stage, entries in ENTRY_POINTS.items():
        for name in entries:
            if name in graph:
                reached[name] = {stage}
    return reached


def _specific(name: str, callers: Counter[str]) -> bool:
    """Whether the calls of a function of this name are followed. A frame shows a name only, and the
    graph merges every function of one name: `__init__`, `get` or `forward` of a hundred classes
    would lead from any stage to all of vLLM. They are reached, but not gone through."""
    return not name.startswith("__") and callers[name] <= MAX_CALLERS


def build(staged: dict[str, dict[str, set[str]]]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """The map over all releases ({stage: sorted names}: the functions that one stage alone reaches
    in every release), and how many functions each release places in one stage; `staged` holds each
    release's stages_of_release."""
    placed: dict[str, set[str]] = defaultdict(set)
    counts = {}
    for version in sorted(staged, key=version_key):
        release = staged[version]
        counts[version] = sum(len(stages) == 1 for stages in release.values())
        for name, stages in release.items():
            placed[name] |= stages
    by_stage: dict[str, list[str]] = {stage: [] for stage in ENTRY_POINTS}
    for name in sorted(placed):
        # A dunder (`__call__` of a hundred classes) or a decorator's inner function places no frame.
        if len(placed[name]) == 1 and not name.startswith("__") and name not in GENERIC_NAMES:
            by_stage[next(iter(placed[name]))].append(name)
    return by_stage, counts


# The logger calls that print a traceback or an error: their [file:line] places the lines they log.
ERROR_CALLS = {"logger.error", "logger.exception", "logger.critical", "logger.error_once"}
# Error records whose words place them where their function does not: V1's run_engine_core builds the
# engine and then runs its busy loop, and logs "EngineCore failed to start." while building it, and
# this, its else branch, once the engine was built (so a traceback cut below the header still shows).
SERVING_WORDS = {"EngineCore encountered a fatal error.", "EngineCoreProc encountered a fatal error."}


def logged_at(per_release: dict[str, tuple[dict[str, set[str]], list[dict]]], one_request: list[str]) -> dict[str, str]:
    """{"file.py:line": stage} for the error-level logger calls of vLLM's staged functions: a record
    vLLM's logger prints names that place, so an excerpt cut inside a traceback logged by the serving
    loop's handler (V0's "async_llm_engine.py:52]") shows where it ran, or whose words do (SERVING_WORDS).
    Kept where every release that has a call on that file and line agrees. A request's error (the
    `one_request` places) is logged while serving, even by a handler whose name start-up's code shares.
    `per_release` holds each release's stages_of_release and logger calls."""
    votes: dict[str, set[str]] = defaultdict(set)
    for release, messages in per_release.values():
        for message in messages:
            if message["call"] not in ERROR_CALLS:
                continue
            stages = release.get(message["function"], set())
            stage = next(iter(stages)) if len(stages) == 1 else ""
            stage = "serving" if message["template"] in SERVING_WORDS else stage
            for place in _places(message):
                votes[place].add(stage)
    placed = {place: next(iter(stages)) for place, stages in votes.items() if len(stages) == 1 and "" not in stages}
    return dict(sorted({**dict.fromkeys(one_request, "serving"), **placed}.items()))


# Where the API server handles one request: its handlers (OpenAI's, and since 0.12 pooling's, Anthropic's,
# Cohere's, speech's and serve's, each a subpackage of vllm/entrypoints; not the command line's or the
# launchers'), and the parsers of a model's tool calls and reasoning that they run on its output. An error
# logged there is that request's: the server goes on (an engine that died says so in words of its own,
# EngineDeadError).
REQUEST_FILES = re.compile(r"vllm/(?:entrypoints/(?!cli/|launchers/)\w+|tool_parsers|reasoning)/")
# The parsers' own functions: what they cannot parse goes back to the client as text, not as an error.
OUTPUT_PARSERS = re.compile(r"_?extract_(?:tool_calls|reasoning)")
# The error-level calls that report one request's error (CRITICAL: the server gives up).
REQUEST_ERROR_CALLS = ERROR_CALLS - {"logger.critical"}


def one_request_at(per_release: dict[str, tuple[dict[str, set[str]], list[dict]]]) -> list[str]:
    """The "file.py:line" places of the error-level logger calls of the API server's request path (see
    REQUEST_FILES) in functions that the serving loop reaches: what they log is one request's error. Kept where
    every release with a call on that place agrees. `per_release` holds each release's stages_of_release
    and logger calls."""
    votes: dict[str, set[bool]] = defaultdict(set)
    for release, messages in per_release.values():
        for message in messages:
            if message["call"] not in ERROR_CALLS:
                continue
            function = message["function"]
            # Reached from serving is enough in a handler's file: the call graph merges functions by name,
            # and a handler's `_preprocess` shares its name with processors that profiling runs.
            serving = "serving" in release.get(function, ()) or OUTPUT_PARSERS.match(function) is not None
            request = message["call"] in REQUEST_ERROR_CALLS and bool(REQUEST_FILES.search(message["file"]))
            for place in _places(message):
                votes[place].add(request and serving)
    return sorted(place for place, request in votes.items() if request == {True})


def answered_at(per_release: dict[str, list[dict]]) -> list[str]:
    """The "file.py:line" places of `logger.exception` calls in an `except` block that returns and
    never raises (a request handler answering with an error response): the traceback they log is one
    request's error, and the process goes on. Kept where every release with such a call on that place
    agrees (only `exception` prints a traceback: another file's plain `error` there does not vote)."""
    votes: dict[str, set[bool]] = defaultdict(set)
    for messages in per_release.values():
        for message in messages:
            # A parser that cannot parse the model's output answers with it as text, not with an error.
            if message["call"] == "logger.exception" and not OUTPUT_PARSERS.match(message["function"]):
                for place in _places(message):
                    votes[place].add(message["answered"])
    return sorted(place for place, answered in votes.items() if answered == {True})


def _places(message: dict) -> Iterator[str]:
    """Each "file.py:line" a record of this logger call may name: every line the call spans."""
    name = message["file"].rsplit("/", 1)[-1]
    for first, last in message["lines"]:
        for line in range(first, last + 1):
            yield f"{name}:{line}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offline", action="store_true", help="use cached releases only")
    args = parser.parse_args(argv)
    if args.offline:
        versions = sorted((p.stem for p in CACHE.glob("*.json")), key=version_key)
    else:
        versions = releases()
        for version, why in harvest(versions).items():
            print(f"failed: vllm {version}: {why}", file=sys.stderr)
    # Each release's stages and logger calls, worked out and read once.
    staged = {v: stages_of_release(graph) for v in versions if (graph := cached_calls(v)) is not None}
    messages = {v: cached(v) or [] for v in staged}
    calls = {v: (staged[v], messages[v]) for v in staged}
    by_stage, counts = build(staged)
    one_request = one_request_at(calls)
    places = logged_at(calls, one_request)
    answered = answered_at(messages)
    document = {
        "about": "vLLM's functions by the stage they run in, from each release's calls (tools/stages/extract.py)",
        "entry_points": {stage: list(names) for stage, names in ENTRY_POINTS.items()},
        "functions_placed_per_release": counts,
        "stages": by_stage,
        "logged_at": places,
        "answered_at": answered,
        "one_request_at": one_request,
    }
    STAGES_JSON.write_text(json.dumps(document, indent=1) + "\n")
    sizes = ", ".join(f"{stage} {len(names)}" for stage, names in by_stage.items())
    placed = f"error records placed: {len(places)}, answered: {len(answered)}, one request's: {len(one_request)}"
    print(f"{len(staged)} releases; functions by stage: {sizes}; {placed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
