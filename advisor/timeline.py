"""Timeline: facts in order, grouped into runs, tracebacks joined, each fact given its phase and stage."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from advisor.parse.facts import Fact, Number
from advisor.parse.grammar import FOREIGN_STAGES, PASS_THROUGH, REQUEST_VALIDATORS, RPC_DISPATCHERS, SERVING_RPCS

# A run starts with these; vLLM prints them once per launch.
RUN_MARKERS = {"server_version", "non_default_args", "namespace_args"}
# The only kinds that can begin a new run (see starts_new_run).
STARTING_KINDS = RUN_MARKERS | {"engine_config"}
# Traceback plumbing: joined into the exception it ends, not an event of its own.
TRACEBACK_KINDS = {"traceback_start", "frame", "serving_call", "exception_chain"}
# The facts of a traceback that an error-level logger call may have printed (see logged_in).
LOGGED_KINDS = TRACEBACK_KINDS | {"exception"}
# A run that shows one of these is over: a marker or an engine config after it begins the next run.
FINISHED_KINDS = {"ready", "shutdown", "engine_start_failed"}
# Signs that startup is over: a server that got ready, or one already serving (online or offline).
READY_KINDS = {"ready", "stats", "offline_progress"}
# Signs that requests were being served, for excerpts that start after readiness.
SERVING_KINDS = {
    "stats",
    "request_too_long",
    "request_too_long_input",
    "request_too_long_total",
    "prompt_too_long",
    "prompt_too_long_v1",
    "http_error",
    "preemption",
    "preemption_count",
    "request_aborted",
    "request_added",
    "offline_progress",
}
# An engine that is dead to its requests, or whose serving loop failed, was serving, and uvicorn shuts
# down an application only after starting it; a CUDA kernel's failed assertion is a request's data far
# more often than start-up's dummy inputs: an excerpt that shows one before any startup step began
# after readiness (but none of them is progress).
DEATH_WHILE_SERVING_KINDS = {"engine_dead", "engine_loop_failed", "app_shutdown", "device_assert"}
# Signs of startup progress: their presence means the excerpt did not start mid-serving.
STARTUP_KINDS = {
    "engine_config",
    "non_default_args",
    "namespace_args",
    "server_version",
    "weights",
    "memory_profile",
    "kv_available",
    "kv_cache_size",
    "gpu_blocks",
    "graph_capture_start",
}
# Signs that vLLM was still making progress: an error after the last of them ends the run.
PROGRESS_KINDS = STARTUP_KINDS | READY_KINDS | SERVING_KINDS
# The derived values of an event that moved nothing: one read-only mapping shared by all of them.
NO_CHANGE: Mapping[str, float] = MappingProxyType({})
NO_STAGE = ("", ())  # stage and frames of a fact that ends no traceback
# The stage of an exception whose whole traceback runs outside vLLM, in no vLLM process: a user's
# own script (a client that got an HTTP error), not vLLM failing.
FOREIGN = "foreign"
KV_SIZING_KINDS = {
    "kv_available",
    "kv_cache_size",
    "gpu_blocks",
    "memory_profile",
    "weights_take",
    "kv_reserved",
    "cpu_kv_reserved",
    "profile_row",
}
# The kinds that move a startup from one stage to the next (see place).
STAGE_STEP_KINDS = KV_SIZING_KINDS | {"graph_capture_start", "graph_captured", "ready"}
# What a traceback's frames say about the stage it failed in: vLLM's functions by the stage they run
# in, derived from every release's source by tools/stages/extract.py (innermost frame wins).
_STAGES = json.loads(resources.files("advisor").joinpath("stages.json").read_text(encoding="utf-8"))
STAGE_BY_FUNCTION: dict[str, frozenset[str]] = {stage: frozenset(names) for stage, names in _STAGES["stages"].items()}
# The stages of a start, before the server serves: every stage of the map but serving.
STARTUP_STAGES = frozenset(STAGE_BY_FUNCTION) - {"serving"}
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
# More NCCL collectives than start-up runs in one process group: the watchdog's SeqNum past this is a
# server that has been stepping (SeqNum=1 is the first collective, at start-up).
STARTUP_COLLECTIVES = 1000
# Where a model step is the serving step, by the module of its frame: V1's engine steps alone call
# execute_model (its profile_run calls _dummy_run), and V0's workers and executors run it for the engine's
# step; only V0's model runners run it from profile_run too (read in 0.5.4, 0.6.3 and 0.10.1).
SERVING_STEP_MODULE = re.compile(r"^v1/|^(?!.*model_runner)")
# V1's executor names the method its workers did not answer in time (multiproc_executor.collective_rpc:
# f"RPC call to {method} timed out."), from whatever frame called it.
RPC_TIMED_OUT = re.compile(r"RPC call to (\w+) timed out")
SCRIPT_RANK = re.compile(r"\[rank\d+\]")
# Ray's error for a task that raised names the actor's method it ran, "RayTaskError(RuntimeError):
# ray::WorkerDict.actor_rollout_generate_sequences() (pid=...)", and prints that task's own traceback
# after it: the method (or a plain task's function, "ray::main_task()") is the outermost frame of what
# follows, which is the script's own until a vLLM frame shows. vLLM's own Ray workers' methods are
# vLLM's frames; verl's colocated WorkerDict names a method "<role>_<method>".
RAY_TASK = re.compile(r"(?:[\w.]+\): )?ray::(?:(\w+)\.)?(\w+)\(\)")
VLLM_RAY_ACTORS = {"RayWorkerWrapper", "RayWorkerProc", "RayWorker"}


@dataclass(slots=True)  # one per stats line of a long log: no per-instance dict
class Event:
    """A fact placed in time: the run phase when it happened and, for failures, the stage."""

    fact: Fact
    phase: str  # startup | runtime
    stage: str = ""  # model_init | kv_sizing | graph_capture | server_start | serving | "" when unknown
    frames: tuple[str, ...] = ()
    derived: Mapping[str, float] = field(default_factory=lambda: NO_CHANGE)  # read-only: shared

    @property
    def kind(self) -> str:
        return self.fact.kind

    @property
    def line(self) -> int:
        return self.fact.line


@dataclass
class Run:
    """One launch of vLLM: its facts from the first marker to the next launch."""

    index: int
    facts: list[Fact] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    # Read by place() in the pass that places the events: a packed fact builds its values on each read.
    values: dict[str, Number] = field(default_factory=dict)  # the last value of each name
    peak_running_reqs: Number | None = None  # the most requests an event shows running at once
    vllm_version: str | None = None  # the last version the run states
    backend: str | None = None  # the device vLLM runs on, as the lines name it first (cpu, cuda, xpu, ...)
    progress_line: int | None = None  # the last line showing startup or serving: what fails after it ends the run

    def kinds(self) -> set[str]:
        return {f.kind for f in self.facts}

    @property
    def ready_line(self) -> int | None:
        return next((f.line for f in self.facts if f.kind in READY_KINDS), None)

    @property
    def shutdown_line(self) -> int | None:
        """The first sign of a stop: vLLM's shutdown, or the KeyboardInterrupt of the operator's Ctrl-C."""
        return next(
            (f.line for f in self.facts if f.kind == "shutdown" or (f.kind == "exception" and _interrupted(f))), None
        )

    def launch_args(self) -> dict[str, Any]:
        return next((f.args for f in self.facts if f.kind in ("non_default_args", "namespace_args") and f.args), {})

    def root_cause(self, before_line: int) -> str | None:
        """The first exception logged in the run up to a line, as 'Type: message'."""
        first = next((f for f in self.facts if f.kind == "exception" and f.line <= before_line), None)
        # Without its full stop: the rules' sentences put their own after it.
        return f"{first.text['type']}: {first.text.get('message', '')}".strip(": ").rstrip(".") if first else None


def _interrupted(exception: Fact) -> bool:
    return exception.text.get("type", "").endswith("KeyboardInterrupt")


def split_runs(facts: Iterable[Fact]) -> list[Run]:
    """Group facts into runs: a restart in the same file begins a new one."""
    runs = [Run(0)]
    seen: set[str] = set()  # kinds of the current run, kept as we go: Run.kinds() per fact was quadratic
    current = runs[0].facts
    for fact in facts:
        kind = fact.kind
        if kind in STARTING_KINDS and starts_new_run(seen, fact):  # the first test spares a call per fact
            runs.append(Run(len(runs)))
            current, seen = runs[-1].facts, set()
        current.append(fact)
        seen.add(kind)
    for run in runs:
        run.events = place(run)
    return [run for run in runs if run.facts]


def starts_new_run(kinds: set[str], fact: Fact) -> bool:
    """Whether a fact begins a new launch, given the kinds of fact the current run has shown."""
    finished = not kinds.isdisjoint(FINISHED_KINDS)
    if fact.kind in RUN_MARKERS:
        return finished or fact.kind in kinds
    return fact.kind == "engine_config" and finished


def place(run: Run) -> list[Event]:
    """Give each fact of a run its phase and stage, joining tracebacks with their final exception;
    note the run's last values, peak of running requests, backend and last progress on the way."""
    facts = run.facts
    # Facts from this line on happen at runtime; never ready: all runtime if the excerpt began after
    # readiness, else all startup.
    stage_of_line, open_frames = _traceback_stages(facts)
    runtime_from: float = (
        run.ready_line
        if run.ready_line is not None
        else (-math.inf if _started_mid_way(facts, stage_of_line) else math.inf)
    )
    weights_lines = {f.line for f in facts if f.kind == "weights_create_failed"}
    compile_lines = {f.line for f in facts if f.text.get("compiling")}
    captured_late = _before_unfinished_capture(facts)
    events: list[Event] = []
    previous_stats: dict[tuple[str | None, Number | None], dict[str, Number]] = {}  # by process and engine
    capturing = sized = False
    last_values: dict[str, Number] = {}
    peak = backend = progress = None
    in_traceback: set[str | None] = set()  # the processes whose last fact was a line of a traceback
    headers = _traceback_headers(facts)
    for fact in facts:
        kind, line, values = (
            fact.kind,
            fact.line,
            fact.values,
        )  # read once: a packed fact builds its values on each read
        last_values.update(values)
        if backend is None:
            backend = fact.text.get("device")
        if kind in PROGRESS_KINDS and not _stuck(kind, values):
            progress = line
        if kind in TRACEBACK_KINDS:
            in_traceback.add(fact.process)
            continue
        if kind == "error_record" and (fact.process in in_traceback or id(fact) in headers):
            continue  # a line of a traceback its logger call prints (a code line the paste unindented), or its header
        in_traceback.discard(fact.process)
        if kind in STAGE_STEP_KINDS:  # the other kinds leave both as they are
            capturing = (capturing or kind == "graph_capture_start") and kind not in ("graph_captured", "ready")
            sized = sized or kind in KV_SIZING_KINDS
        stage, frames = stage_of_line.get(line, NO_STAGE)
        if kind == "error_record" and "answered" in fact.text:
            frames = (ANSWERED, *frames)  # a handler's own error record: one request's, answered
        if stage == FOREIGN and kind == "exception":  # a script's own traceback: not vLLM failing
            continue
        # Its stage is already its frames' (or what it raised): only the serving loops' own frames are left to ask.
        serving = stage == "serving" or not SERVING_LOOPS.isdisjoint(frames)
        phase = "runtime" if line >= runtime_from or serving else "startup"
        sized = sized or stage == "kv_sizing"  # an error raised while sizing: sizing had begun
        if not stage:
            compiling = capturing or id(fact) in captured_late or line in compile_lines
            stage = _stage_from_context(line in weights_lines, phase, compiling, sized)
        if kind == "stats":
            engine = (fact.process, values.get("engine"))
            events.append(Event(fact, phase, stage, frames, _stats_change(previous_stats.get(engine), values)))
            previous_stats[engine] = values
        else:
            events.append(Event(fact, phase, stage, frames))
        running = values.get("running_reqs")
        if running is not None and (peak is None or running > peak):  # the first of equal peaks, as max() keeps
            peak = running
    run.values, run.peak_running_reqs, run.backend, run.progress_line = last_values, peak, backend, progress
    run.vllm_version = next((f.text["vllm_version"] for f in reversed(facts) if f.text.get("vllm_version")), None)
    # An excerpt cut inside a traceback, even right after its "Traceback (most recent call last):".
    for process, cut_frames in open_frames.items():
        last = max(f.line for f in facts if f.process == process)
        level = next(f.level for f in reversed(facts) if f.process == process)
        stub = Fact(kind="incomplete_traceback", line=last, process=process, level=level)
        phase = "runtime" if last >= runtime_from or _in_serving_loop(cut_frames) else "startup"
        events.append(Event(stub, phase, stage_from_frames(tuple(cut_frames)), tuple(cut_frames)))
    return sorted(events, key=attrgetter("fact.line"))


def _traceback_headers(facts: list[Fact]) -> set[int]:
    """The ids of the error records whose process's next fact is a traceback: the logger call's own words
    before the traceback it prints ("WorkerProc hit an exception."), which the traceback speaks for."""
    headers: set[int] = set()
    last_record: dict[str | None, Fact] = {}
    for fact in facts:
        record = last_record.pop(fact.process, None)
        if record is not None and fact.kind in LOGGED_KINDS:
            headers.add(id(record))
        if fact.kind == "error_record":
            last_record[fact.process] = fact
    return headers


def _before_unfinished_capture(facts: list[Fact]) -> set[int]:
    """The ids of the facts printed before another process's CUDA-graph capture that never finished.

    Ray prints its workers' lines late, and folds repeats into one ("[repeated 7x across
    cluster]"), so the driver's error can stand before the capture it happened in. A capture that
    no "captured" or ready line follows was still under way when the run ended.
    """
    start = next((f for f in reversed(facts) if f.kind == "graph_capture_start" and f.process), None)
    if start is None or any(f.kind in ("graph_captured", "ready") and f.line > start.line for f in facts):
        return set()
    return {id(f) for f in facts if f.line <= start.line and f.process != start.process}


def _in_serving_loop(frames: Sequence[str]) -> bool:
    """Whether a traceback runs in the serving loop, or its innermost staged frame serves requests."""
    return bool(frames) and (not SERVING_LOOPS.isdisjoint(frames) or stage_from_frames(tuple(frames)) == "serving")


def _traceback_stages(facts: list[Fact]) -> tuple[dict[int, tuple[str, tuple[str, ...]]], dict[str | None, list[str]]]:
    """The stage and frames of each exception's line, and the frames of tracebacks left open at the end.

    An exception that "was the direct cause of the following exception" happened inside the frames of
    the traceback that follows it: those frames are its outer ones.
    """
    open_frames: dict[str | None, list[str]] = {}
    foreign: dict[str | None, bool] = {}  # process -> its open traceback has only frames outside vLLM
    stage_of_line: dict[int, tuple[str, tuple[str, ...]]] = {}
    last_exception: dict[str | None, int] = {}
    causes: dict[str | None, int] = {}  # process -> line of the exception a chain marker points back to

    def resolve(process: str | None, frames: tuple[str, ...]) -> None:
        cause = causes.pop(process, None)
        if cause is not None:
            inner = stage_of_line.get(cause, NO_STAGE)[1]
            stage_of_line[cause] = (stage_from_frames(frames + inner), frames + inner)

    finished = False  # an offline run's last progress bar had reached 100%: generate() had returned
    for fact in facts:
        kind, process = fact.kind, fact.process
        if kind == "offline_progress":
            finished = fact.values.get("progress_pct") == 100
        if kind == "traceback_start":
            open_frames[process] = []
            foreign[process] = _script_process(process) and fact.level is None
        if kind in LOGGED_KINDS and (logged := _logger_frames(fact)):
            # The logger call that printed it is the traceback's outermost known place.
            frames_so_far = open_frames.setdefault(process, [])
            if not frames_so_far or not frames_so_far[0].startswith((LOGGED_IN, ANSWERED)):
                frames_so_far[:0] = logged
        if kind in ("frame", "serving_call"):  # an excerpt may start inside a traceback
            _append_frame(open_frames.setdefault(process, []), _frame_name(fact))
            foreign[process] = foreign.get(process, False) and fact.text.get("package") != "vllm"
        elif kind == "exception_chain" and process in last_exception:
            causes[process] = last_exception[process]
        elif kind == "exception":
            frames = tuple(open_frames.pop(process, ()))
            if frames and foreign.pop(process, False) and fact.level is None:
                stage_of_line[fact.line] = (FOREIGN, frames)
            else:
                stage_of_line[fact.line] = (stage_from_frames(frames) or raised_stage(fact.text), frames)
                resolve(process, frames)
                last_exception[process] = fact.line
            if ray_method := _ray_task_frame(fact.text):  # the task's error happened where its traceback says
                open_frames[process], foreign[process], causes[process] = [ray_method], True, fact.line
    for process, pending in list(open_frames.items()):
        if finished and foreign.get(process) and pending:
            # Cut after the script's own frames, once vLLM's work had finished: the script's error.
            del open_frames[process]
            continue
        resolve(process, tuple(pending))
    return stage_of_line, open_frames


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
    """The pseudo-frames of the logger call that printed a traceback's line: its stage, and whether it
    answers the request (see ANSWERED)."""
    text = fact.text
    frames = [LOGGED_IN + text["logged_in"]] if "logged_in" in text else []
    return [ANSWERED, *frames] if "answered" in text else frames


def _frame_name(fact: Fact) -> str:
    """A frame's function, as the stage map knows it: vLLM's own, or marked foreign."""
    text = fact.text
    function = text.get("function", "")
    if function in SERVING_RPCS and SERVING_STEP_MODULE.match(text.get("module", "model_runner")):
        return LOGGED_IN + "serving"
    return function if fact.kind == "serving_call" or text.get("package") == "vllm" else FOREIGN_FRAME + function


def stage_from_frames(frames: tuple[str, ...]) -> str:
    asked = _rpc_asked(frames)
    # What the worker was asked to do outranks its inner frames. A method of another package (an RL
    # framework's worker extension syncing weights) is asked of an engine already built.
    if asked in SERVING_RPCS or (asked or "").startswith(FOREIGN_FRAME):
        return "serving"
    for function in reversed(frames):  # innermost frame first
        if function in REQUEST_VALIDATORS:
            return "serving"
        if function.startswith(LOGGED_IN):
            return function.removeprefix(LOGGED_IN)
        if function in FOREIGN_STAGE_FRAMES:
            return FOREIGN_STAGE_FRAMES[function]
        for stage, names in STAGE_BY_FUNCTION.items():
            if function in names:
                return stage
    return ""


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


def _stage_from_context(creating_weights: bool, phase: str, capturing: bool, sized: bool) -> str:
    if creating_weights:
        return "model_init"
    if phase == "runtime":
        return "serving"
    if capturing:
        return "graph_capture"
    return "kv_sizing" if sized else "model_init"


def _started_mid_way(facts: list[Fact], stage_of_line: Mapping[int, tuple[str, tuple[str, ...]]]) -> bool:
    """An excerpt that shows serving (a serving sign, a death while serving, a record a serving-only logger
    call printed) before (or without) any startup step began after readiness."""
    for fact in facts:
        if fact.kind in STARTUP_KINDS or fact.kind == "engine_start_failed":  # a start's step, or its failure
            return False
        if fact.kind in SERVING_KINDS or fact.kind in DEATH_WHILE_SERVING_KINDS or _stepping(fact):
            return True
        # A record that a serving-only logger call printed (its message, or the start of its traceback;
        # an excerpt that starts among a traceback's frames is judged by the frames, below). Frames that
        # place it in a start-up stage outrank the place of its [file:line], which a build between
        # releases (or a fork) may have moved.
        if (
            fact.text.get("logged_in") == "serving"
            and fact.kind != "frame"
            and stage_of_line.get(fact.line, NO_STAGE)[0] not in STARTUP_STAGES
        ):
            return True
        if fact.text.get("request"):  # an error record names a request the server had taken in
            return True
    serving_frames = STAGE_BY_FUNCTION["serving"]
    if any(f.kind == "frame" and _frame_name(f) in serving_frames for f in facts):
        return True
    # No start-up step at all: a death that ends serving far more often than start-up places the excerpt,
    # unless its frames place it in start-up, the watchdog names one of start-up's first collectives, or
    # the excerpt opens on the launch command (a weak sign of start-up: posters elide what follows it).
    if any(f.kind == "launch_command" for f in facts):
        return False
    early = any(f.kind == "nccl_collectives" and not _stepping(f) for f in facts)
    return any(
        _dies_mostly_serving(f, early) and stage_of_line.get(f.line, NO_STAGE)[0] not in STARTUP_STAGES for f in facts
    )


def _dies_mostly_serving(fact: Fact, early_collective: bool) -> bool:
    """A GPU's fault (an illegal memory access, ROCm's memory access fault: 13 of the 19 in the corpora
    were serving; Ascend's inner errors are start-up's more often), or PyTorch's NCCL watchdog aborting
    the process (13 of 16)."""
    watchdog = fact.kind == "nccl_error" and fact.text.get("by") == "watchdog"
    gpu_fault = fact.kind == "device_fault" and fact.text.get("device") != "npu"
    return gpu_fault or (watchdog and not early_collective)


def _stepping(fact: Fact) -> bool:
    """Whether a fact shows the engine had been stepping: an NCCL collective numbered past what start-up
    runs (a few barriers and broadcasts, a profiling pass), as PyTorch's watchdog names it."""
    return fact.kind == "nccl_collectives" and fact.values.get("nccl_seq_num", 0) > STARTUP_COLLECTIVES


def _stuck(kind: str, values: Mapping[str, Number]) -> bool:
    """A stats line of requests waiting while none runs and nothing was processed: no progress."""
    return (
        kind == "stats"
        and values.get("waiting_reqs", 0) > 0
        and values.get("running_reqs") == 0
        and values.get("prompt_throughput") == 0
        and values.get("generation_throughput") == 0
    )


def _stats_change(before: dict[str, float] | None, after: dict[str, float]) -> Mapping[str, float]:
    """How the scheduler queues moved since the previous stats line of the same engine (their values)."""
    if before is None:
        return NO_CHANGE
    change = {}
    # Only movements in the telling direction: a rise in running is not a "negative drop". A count
    # the line did not print (cut short by a CR) is unknown, not zero: it moved nothing.
    running_before, running_after = before.get("running_reqs"), after.get("running_reqs")
    if running_before is not None and running_after is not None and running_before > running_after:
        change["running_drop"] = running_before - running_after
    waiting_before, waiting_after = before.get("waiting_reqs"), after.get("waiting_reqs")
    if waiting_before is not None and waiting_after is not None and waiting_after > waiting_before:
        change["waiting_rise"] = waiting_after - waiting_before
    usage_before, usage_after = before.get("kv_cache_usage_pct"), after.get("kv_cache_usage_pct")
    if usage_before is not None and usage_after is not None:
        # A preemption frees the blocks it took: the cache was full on the line before, not after.
        change["kv_usage_peak_pct"] = max(usage_before, usage_after)
        if usage_after > usage_before:
            change["kv_usage_rise"] = round(usage_after - usage_before, 1)
    return change or NO_CHANGE
