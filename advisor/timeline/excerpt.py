"""Where an excerpt begins: at a start, or mid-way through serving (a paste that opens after readiness)."""

from __future__ import annotations

from collections.abc import Mapping

from advisor.parse.facts import Fact
from advisor.timeline.frames import NO_STAGE, STAGE_BY_FUNCTION, STARTUP_STAGES, frame_name
from advisor.timeline.kinds import DEATH_WHILE_SERVING_KINDS, SERVING_KINDS, STARTUP_KINDS

# More NCCL collectives than start-up runs in one process group: the watchdog's SeqNum past this is a
# server that has been stepping (SeqNum=1 is the first collective, at start-up).
STARTUP_COLLECTIVES = 1000


def started_mid_way(facts: list[Fact], stage_of_line: Mapping[int, tuple[str, tuple[str, ...]]]) -> bool:
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
    if any(f.kind == "frame" and frame_name(f) in serving_frames for f in facts):
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
    """A GPU's fault (an illegal memory access, ROCm's memory access fault: 15 of the 22 in the corpora
    were serving; Ascend's inner errors are start-up's more often), PyTorch's NCCL watchdog aborting
    the process (15 of 20), a process killed for the host's memory (Ray's memory monitor: the 3 with no
    start-up step were serving, the host's memory having grown with the requests), or V0's model runner
    failing a step (4 of 5)."""
    watchdog = fact.kind == "nccl_error" and fact.text.get("by") == "watchdog"
    gpu_fault = fact.kind == "device_fault" and fact.text.get("device") != "npu"
    host_oom_kill = fact.kind == "supervisor_exit" and fact.text.get("reason") == "out of memory"
    step_failed = fact.kind == "model_execution_failed"
    return gpu_fault or host_oom_kill or step_failed or (watchdog and not early_collective)


def _stepping(fact: Fact) -> bool:
    """Whether a fact shows the engine had been stepping: an NCCL collective numbered past what start-up
    runs (a few barriers and broadcasts, a profiling pass), as PyTorch's watchdog names it."""
    return fact.kind == "nccl_collectives" and fact.values.get("nccl_seq_num", 0) > STARTUP_COLLECTIVES
