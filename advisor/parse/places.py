"""Where a line places vLLM, from the stage map (advisor/stages.json): the functions each stage runs, the
error records logged only while serving, and a record's own words that name one request."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

from advisor.parse.envelope import CRITICAL, ERROR, Envelope


@cache
def _stages_json() -> dict[str, Any]:
    stages: dict[str, Any] = json.loads(resources.files("advisor").joinpath("stages.json").read_text(encoding="utf-8"))
    return stages


# Frames the stage map cannot place and the timeline still reads: other packages' that name a stage
# (torch.cuda.graph's capture, the device context that creates a model's tensors, the web stack's
# handling of a request), and vLLM's checks of one request's input, which reject that request alone.
FOREIGN_STAGES = {
    "capture_begin": "graph_capture",
    "capture_end": "graph_capture",
    "__torch_function__": "model_init",
    # FastAPI's call of a route's endpoint, Starlette's wrapper of a request's handling and uvicorn's
    # cycle of one HTTP request: a traceback through them is a request's, so the server was listening.
    "run_endpoint_function": "serving",
    "wrapped_app": "serving",
    "run_asgi": "serving",
    # verl's rollout worker, the RL trainers' way of running vLLM's generation (Ray's WorkerDict).
    "generate_sequences": "serving",
}


REQUEST_VALIDATORS = frozenset({"_validate_model_inputs", "_validate_model_input", "_validate_input"})


# A worker runs what its executor asks for by name (collective_rpc, V0's execute_method): the vLLM
# frame right inside the dispatcher is the method asked for. Start-up asks for loading, profiling
# and capture by their own names (V0's profile_run calls execute_model directly, not through one);
# only serving asks for a model step.
RPC_DISPATCHERS = frozenset({"worker_busy_loop", "_execute_worker_rpc", "execute_method", "run_method"})


SERVING_RPCS = frozenset({"execute_model", "sample_tokens"})


# Wrappers a worker's RPC dispatcher may call through before the method it was asked to run.
PASS_THROUGH = frozenset({"decorate_context", "wrapper", "inner", "_wrapped_call_impl", "_call_impl"})


@cache
def staged_functions() -> frozenset[str]:
    """Every function a frame may name that says where it ran (advisor/stages.json and the frames the
    timeline reads besides: an RPC's dispatcher, the wrappers it calls through, the method it ran):
    a frame naming one is whole."""
    placed = frozenset(name for names in _stages_json()["stages"].values() for name in names)
    return placed | FOREIGN_STAGES.keys() | REQUEST_VALIDATORS | RPC_DISPATCHERS | SERVING_RPCS | PASS_THROUGH


def logged_at() -> dict[str, str]:
    """The stage of the vLLM function behind each error-level logger call, by the "file.py:line" its
    records print (advisor/stages.json, from every release's source)."""
    logged: dict[str, str] = _stages_json()["logged_at"]
    return logged


# The words an error record's [file:line] gives it, by the list of places in advisor/stages.json:
# "answered", a `logger.exception` call in an `except` block that returns (a request handler logging the
# traceback of the error it answers the client with); "one_request", an error-level call on the API
# server's request path (its handlers, the tool-call and reasoning parsers): one request's error.
PLACED_WORDS = {"answered": "answered_at", "one_request": "one_request_at"}


@cache
def _places(name: str) -> frozenset[str]:
    return frozenset(_stages_json()[name])


# A line whose facts depend on the digits of its [file:line] (logged_stage): an error-level record
# with a source. Digit-uniform, for advisor.fast.templates, which parses such lines every time.
LOCATED_ERROR = re.compile(r"(?:ERROR|CRITICAL) [^\[\]]{0,40}?\[?[\w.\-/]+\.py:\d+\]")


def logged_stage(envelope: Envelope) -> str:
    """The stage an error record was logged in, from its [file:line]; "" when unknown."""
    if envelope.source is None or envelope.level not in (ERROR, CRITICAL):
        return ""
    return logged_at().get(envelope.source, "")


# The OpenAI server's request ids (vllm/entrypoints/openai: "chatcmpl-" and "cmpl-" then a uuid's hex, V1's
# engine adds "-0"): an error that names one happened to a request the server had taken in.
REQUEST_ID = re.compile(r"\b(?:chat)?cmpl-[0-9a-f]{16}")


def names_a_request(envelope: Envelope) -> bool:
    """Whether an error record names a request the server took in (a serving sign)."""
    return envelope.level in (ERROR, CRITICAL) and "cmpl-" in envelope.body and bool(REQUEST_ID.search(envelope.body))


def placed_words(envelope: Envelope) -> dict[str, str]:
    """The words an error record's [file:line] gives it (see PLACED_WORDS)."""
    if envelope.source is None or envelope.level != ERROR:
        return {}
    return {word: "yes" for word, places in PLACED_WORDS.items() if envelope.source in _places(places)}
