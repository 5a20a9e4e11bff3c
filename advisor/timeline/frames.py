"""The stage a traceback ran in, read from its frames (the stage map built from vLLM's source), the
message it raised, or the logger call that printed it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from importlib import resources

from advisor.parse.facts import Fact
from advisor.parse.places import FOREIGN_STAGES, PASS_THROUGH, REQUEST_VALIDATORS, RPC_DISPATCHERS, SERVING_RPCS
from advisor.timeline.kinds import LOGGED_KINDS

NO_STAGE = ("", ())  # stage and frames of a fact that ends no traceback
# The stage of an exception whose whole traceback runs outside vLLM, in no vLLM process: a user's
# own script (a client that got an HTTP error), not vLLM failing.
FOREIGN = "foreign"
# What a traceback's frames say about the stage it failed in: vLLM's functions by the stage they run
# in, derived from every release's source by tools/stages/extract.py (innermost frame wins).
_STAGES = json.loads(resources.files("advisor").joinpath("stages.json").read_text(encoding="utf-8"))
STAGE_BY_FUNCTION: dict[str, frozenset[str]] = {stage: frozenset(names) for stage, names in _STAGES["stages"].items()}
# The stages of a start, before the server serves: every stage of the map but serving.
STARTUP_STAGES = frozenset(STAGE_BY_FUNCTION) - {"serving"}
# Where each stage begins in vLLM's code (the map's entry points): a function the map places by what
# reaches it was reached from one stage's entry points only, within a few calls; an entry point places
# for certain.
ENTRY_STAGE = {name: stage for stage, names in _STAGES["entry_points"].items() for name in names}
# vLLM's raise messages by the stage whose functions alone raise them (tools/stages/raised.py): an
# exception quoting one was raised in that stage, whatever frames the excerpt shows. Looked up by
# their first RAISED_KEY characters (tools/stages/raised.py keeps none shorter).
_RAISED = json.loads(resources.files("advisor").joinpath("raised.json").read_text(encoding="utf-8"))["stages"]
RAISED_KEY = 20
RAISED_BY_START: dict[str, list[tuple[str, str]]] = {}
for _stage, _starts in _RAISED.items():
    for _start in _starts:
        RAISED_BY_START.setdefault(_start[:RAISED_KEY], []).append((_start, _stage))

# A frame outside vLLM's package keeps its place in the traceback under a name no stage holds.
FOREIGN_FRAME = "~"
# The place of the logger call that printed a traceback's lines, as its outermost frame: "@serving".
LOGGED_IN = "@"
# Beside it, when that call is a request handler's that answers the client with the error and goes on.
ANSWERED = "!answered"
# Beside it, when that call is on the API server's request path: one request's error, whatever it answers.
ONE_REQUEST = "!one_request"
# Other packages' frames that name a stage, as a traceback's foreign frames are marked.
FOREIGN_STAGE_FRAMES = {FOREIGN_FRAME + name: stage for name, stage in FOREIGN_STAGES.items()}
# The serving loops: a traceback that runs through one happened while serving, whatever it says
# and whether or not the excerpt shows the server getting ready.
SERVING_LOOPS = {
    "run_busy_loop",
    "run_engine_loop",
    "_process_engine_step",
    "step_with_batch_queue",
    "engine_step",
    "output_handler",
    "_run_output_handler",
    "process_output_sockets",
}
# Where a model step is the serving step, by the module of its frame: V1's engine steps alone call
# execute_model (its profile_run calls _dummy_run), and V0's workers and executors run it for the engine's
# step; only V0's model runners run it from profile_run too (read in 0.5.4, 0.6.3 and 0.10.1).
SERVING_STEP_MODULE = re.compile(r"^v1/|^(?!.*model_runner)")
# V1's queue of a request's outputs re-raises the error the engine's output handler put in it when the
# engine failed ("raise output"): that handler's frame, seen through the request's stream.
ENGINE_ERROR_RERAISED = ("v1/engine/output_processor.py", "get")
# V1's executor names the method its workers did not answer in time (multiproc_executor.collective_rpc:
# f"RPC call to {method} timed out."), from whatever frame called it.
RPC_TIMED_OUT = re.compile(r"RPC call to (\w+) timed out")
SCRIPT_RANK = re.compile(r"\[rank\d+\]")
# The frame of V0's worker RPC dispatcher (worker_base.execute_method), which runs the method asked.
WORKER_DISPATCHER = "execute_method"
# Ray's error for a task that raised names the actor's method it ran, "RayTaskError(RuntimeError):
# ray::WorkerDict.actor_rollout_generate_sequences() (pid=...)", and prints that task's own traceback
# after it: the method (or a plain task's function, "ray::main_task()") is the outermost frame of what
# follows, which is the script's own until a vLLM frame shows. vLLM's own Ray workers' methods are
# vLLM's frames; verl's colocated WorkerDict names a method "<role>_<method>".
RAY_TASK = re.compile(r"(?:[\w.]+\): )?ray::(?:(\w+)\.)?(\w+)\(\)")
VLLM_RAY_ACTORS = {"RayWorkerWrapper", "RayWorkerProc", "RayWorker"}


def in_serving_loop(frames: Sequence[str]) -> bool:
    """Whether a traceback runs in the serving loop, or its innermost staged frame serves requests."""
    return bool(frames) and (not SERVING_LOOPS.isdisjoint(frames) or stage_from_frames(tuple(frames)) == "serving")


def traceback_stages(facts: list[Fact]) -> tuple[dict[int, tuple[str, tuple[str, ...]]], dict[str | None, list[str]]]:
    """The stage and frames of each exception's line, and the frames of tracebacks left open at the end.

    An exception that "was the direct cause of the following exception" happened inside the frames of
    the traceback that follows it: those frames are its outer ones.
    """
    open_frames: dict[str | None, list[str]] = {}
    foreign: dict[str | None, bool] = {}  # process -> its open traceback has only frames outside vLLM
    stage_of_line: dict[int, tuple[str, tuple[str, ...]]] = {}
    last_exception: dict[str | None, int] = {}
    causes: dict[str | None, int] = {}  # process -> line of the exception a chain marker points back to
    remote: set[int] = set()  # the lines of Ray's errors for a task, whose own traceback follows them
    asked: dict[str | None, tuple[str, ...]] = {}  # process -> the method its worker was asked to run, as frames

    def resolve(process: str | None, frames: tuple[str, ...]) -> None:
        cause = causes.pop(process, None)
        if cause is not None:
            # A Ray task's own traceback ran in another process, below the driver's frames that waited on it.
            before = stage_of_line.get(cause, NO_STAGE)[1]
            whole = before + frames if cause in remote else frames + before
            stage_of_line[cause] = (stage_from_frames(whole), whole)

    finished = False  # an offline run's last progress bar had reached 100%: generate() had returned
    for fact in facts:
        kind, process = fact.kind, fact.process
        if kind == "offline_progress":
            finished = fact.values.get("progress_pct") == 100
        if kind in ("traceback_start", "worker_method"):
            open_frames[process] = _opening_frames(fact, asked, stage_of_line)
            foreign[process] = kind == "traceback_start" and _script_process(process) and fact.level is None
        if kind in LOGGED_KINDS and (logged := _logger_frames(fact)):
            # The logger call that printed it is the traceback's outermost known place.
            frames_so_far = open_frames.setdefault(process, [])
            if not frames_so_far or not frames_so_far[0].startswith((LOGGED_IN, ANSWERED, ONE_REQUEST)):
                frames_so_far[:0] = logged
        if kind in ("frame", "serving_call"):  # an excerpt may start inside a traceback
            _append_frame(open_frames.setdefault(process, []), frame_name(fact))
            foreign[process] = foreign.get(process, False) and fact.text.get("package") != "vllm"
        elif kind == "exception_chain" and process in last_exception:
            causes[process] = last_exception[process]
        elif kind == "exception":
            frames = _with_asked(tuple(open_frames.pop(process, ())), asked.pop(process, ()))
            if frames and foreign.pop(process, False) and fact.level is None:
                stage_of_line[fact.line] = (FOREIGN, frames)
            else:
                stage_of_line[fact.line] = (stage_from_frames(frames) or raised_stage(fact.text), frames)
                resolve(process, frames)
                last_exception[process] = fact.line
            if ray_method := _ray_task_frame(fact.text):  # the task's error happened where its traceback says
                open_frames[process], foreign[process], causes[process] = [ray_method], True, fact.line
                remote.add(fact.line)
    for process, pending in list(open_frames.items()):
        if finished and foreign.get(process) and pending:
            # Cut after the script's own frames, once vLLM's work had finished: the script's error.
            del open_frames[process]
            continue
        resolve(process, _with_asked(tuple(pending), asked.pop(process, ())))
    return stage_of_line, open_frames


def _opening_frames(
    fact: Fact, asked: dict[str | None, tuple[str, ...]], stage_of_line: dict[int, tuple[str, tuple[str, ...]]]
) -> list[str]:
    """The frames a traceback opens with: none; or, where a V0 worker names the method it was asked to
    run, that method under its dispatcher. It places an error printed on its line, and is the outer
    frame of a traceback that follows cut before its own (see _with_asked)."""
    if fact.kind != "worker_method":
        return []
    frames = asked[fact.process] = (WORKER_DISPATCHER, fact.text.get("function", ""))
    stage_of_line[fact.line] = (stage_from_frames(frames), frames)
    return list(frames)


def _with_asked(frames: tuple[str, ...], asked: tuple[str, ...]) -> tuple[str, ...]:
    """A worker's traceback with the method it was asked to run outermost, unless it shows its dispatcher."""
    return frames if not asked or WORKER_DISPATCHER in frames else (*asked, *frames)


def _append_frame(frames: list[str], name: str) -> None:
    frames.append(name)
    if name in REQUEST_VALIDATORS and ANSWERED not in frames:  # vLLM rejects that request alone
        frames.insert(0, ANSWERED)


def _ray_task_frame(text: Mapping[str, str]) -> str | None:
    """The frame of the method a Ray task ran, as a traceback's frames are named, if the exception is
    Ray's header for that task's error (see RAY_TASK)."""
    task = RAY_TASK.match(text.get("message", "")) if text.get("type", "").endswith("RayTaskError") else None
    if task is None:
        return None
    actor, method = task.groups()
    if actor in VLLM_RAY_ACTORS:
        return method
    named = next((name for name in FOREIGN_STAGES if method.endswith("_" + name)), method)
    return FOREIGN_FRAME + named


def _script_process(process: str | None) -> bool:
    """Whether lines under this tag are the user's script's own: untagged, or torch's "[rank0]:" tag
    on a distributed script's stderr (vLLM's own processes are named: EngineCore, Worker_TP0, ...)."""
    return process is None or SCRIPT_RANK.fullmatch(process) is not None


def _logger_frames(fact: Fact) -> list[str]:
    """The pseudo-frames of the logger call that printed a traceback's line: its marks and its stage."""
    text = fact.text
    return [*logger_marks(fact), *([LOGGED_IN + text["logged_in"]] if "logged_in" in text else [])]


def logger_marks(fact: Fact) -> list[str]:
    """The marks of the logger call that printed a record: it answers the request (ANSWERED), it is on the
    API server's request path (ONE_REQUEST)."""
    return [mark for mark, key in ((ANSWERED, "answered"), (ONE_REQUEST, "one_request")) if key in fact.text]


def frame_name(fact: Fact) -> str:
    """A frame's function, as the stage map knows it: vLLM's own, or marked foreign."""
    text = fact.text
    function = text.get("function", "")
    if function in SERVING_RPCS and SERVING_STEP_MODULE.match(text.get("module", "model_runner")):
        return LOGGED_IN + "serving"
    if (text.get("module"), function) == ENGINE_ERROR_RERAISED:
        return "output_handler"
    return function if fact.kind == "serving_call" or text.get("package") == "vllm" else FOREIGN_FRAME + function


def stage_from_frames(frames: tuple[str, ...]) -> str:
    asked = _rpc_asked(frames)
    # What the worker was asked to do outranks its inner frames. A method of another package (an RL
    # framework's worker extension syncing weights) is asked of an engine already built.
    if asked in SERVING_RPCS or (asked or "").startswith(FOREIGN_FRAME):
        return "serving"
    for index in range(len(frames) - 1, -1, -1):  # innermost frame first
        function = frames[index]
        if function in REQUEST_VALIDATORS:
            return "serving"
        if function.startswith(LOGGED_IN):
            return function.removeprefix(LOGGED_IN)
        if function in FOREIGN_STAGE_FRAMES:
            return FOREIGN_STAGE_FRAMES[function]
        for stage, names in STAGE_BY_FUNCTION.items():
            if function in names:
                return stage if ENTRY_STAGE.get(function) == stage else _entered(frames[:index], stage)
    return ""


def _entered(outer: tuple[str, ...], reached: str) -> str:
    """The stage of a function the map places by what reaches it (`reached`), given the frames around
    it: another start-up stage's entry point among them, with no serving entry point around that,
    shows the function shared by both stages (a model's forward pass runs in the profiling run and in
    the serving step alike), and the run inside that entry point's stage."""
    for index in range(len(outer) - 1, -1, -1):  # innermost first
        stage = ENTRY_STAGE.get(outer[index], reached)
        if stage == reached:
            continue
        enclosed = any(ENTRY_STAGE.get(function) == "serving" for function in outer[:index])
        return reached if stage == "serving" or enclosed else stage
    return reached


def raised_stage(text: Mapping[str, str]) -> str:
    """The stage whose functions alone raise the exception's message, or the serving loop's for an
    executor's RPC that timed out on a method asked only while serving; or ""."""
    message = text.get("message", "")
    if (asked := RPC_TIMED_OUT.match(message)) and asked[1] in SERVING_RPCS:
        return "serving"
    for start, stage in RAISED_BY_START.get(message[:RAISED_KEY], ()):
        if message.startswith(start):
            return stage
    return ""


def _rpc_asked(frames: tuple[str, ...]) -> str | None:
    """The frame of the method a worker's RPC dispatcher ran (see RPC_DISPATCHERS), if the traceback shows
    it: vLLM's own, or another package's (marked foreign)."""
    dispatched = False
    for function in frames:  # outermost first
        if function in RPC_DISPATCHERS:
            dispatched = True
        elif dispatched and function.removeprefix(FOREIGN_FRAME) not in PASS_THROUGH:
            return function
    return None
