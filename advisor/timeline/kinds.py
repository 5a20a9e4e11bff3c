"""The kinds of fact the timeline groups runs and places phases by."""

from __future__ import annotations

# A run starts with these; vLLM prints them once per launch.
RUN_MARKERS = {"server_version", "non_default_args", "namespace_args"}
# The only kinds that can begin a new run (see starts_new_run).
STARTING_KINDS = RUN_MARKERS | {"engine_config"}
# Traceback plumbing: joined into the exception it ends, not an event of its own.
TRACEBACK_KINDS = {"traceback_start", "frame", "serving_call", "worker_method", "exception_chain"}
# The facts of a traceback that an error-level logger call may have printed (see logged_in).
LOGGED_KINDS = TRACEBACK_KINDS | {"exception"}
# A run that shows one of these is over: a marker or an engine config after it begins the next run.
FINISHED_KINDS = {"ready", "shutdown", "engine_start_failed"}
# Signs that startup is over: a server that got ready, or one already serving (online or offline).
READY_KINDS = {"ready", "stats", "offline_progress"}
# Signs that the server had got ready before them, unless its start had failed before (a wrapper's own
# server answers while vLLM starts, Xinference's 503s): a request it answered (or answered with an HTTP error) or took
# in, an engine dead to its requests, a serving loop that failed, uvicorn shutting down the app it started.
SERVED_KINDS = {"http_error", "request_answered", "request_added", "engine_dead", "engine_loop_failed", "app_shutdown"}
# Signs that requests were being served, for excerpts that start after readiness.
SERVING_KINDS = {
    "stats",
    "request_too_long",
    "request_too_long_input",
    "request_too_long_total",
    "prompt_too_long",
    "prompt_too_long_v1",
    "prompt_exceeds_blocks",
    "max_tokens_negative",
    "http_error",
    "request_answered",
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
# The engine's own death, as the API server or its loop states it.
ENGINE_DEATH_KINDS = {"engine_dead", "engine_loop_failed", "engine_fatal"}
# Signs of startup progress: their presence means the excerpt did not start mid-serving.
STARTUP_KINDS = {
    "engine_config",
    "non_default_args",
    "namespace_args",
    "server_version",
    "weights",
    "memory_profile",
    "kv_available",
    "hbm_statistics",
    "kv_cache_size",
    "gpu_blocks",
    "graph_capture_start",
    "rank_assigned",
}
# Signs that vLLM was still making progress: an error after the last of them ends the run.
PROGRESS_KINDS = STARTUP_KINDS | READY_KINDS | SERVING_KINDS
KV_SIZING_KINDS = {
    "kv_available",
    "hbm_statistics",
    "kv_cache_size",
    "gpu_blocks",
    "memory_profile",
    "weights_take",
    "kv_reserved",
    "memory_requested",
    "profiling_took",
    "cpu_kv_reserved",
    "profile_row",
}
# The kinds that move a startup from one stage to the next (see place).
STAGE_STEP_KINDS = KV_SIZING_KINDS | {"graph_capture_start", "graph_captured", "ready"}
