"""Facts of the messages that tell how vLLM was launched: its command, arguments, engine config,
version and the length it uses."""

from __future__ import annotations

import contextlib
import re
import shlex
from collections.abc import Callable
from typing import Any

from lark import Token, Transformer

from advisor.parse.children import Children, Parts, named, numbers, token
from advisor.parse.facts import Number, config_pairs, literal_dict, namespace_args, number, whole_items

# Numeric launch arguments and the fact names they feed.
ARG_FACTS = {
    "max_model_len": "max_seq_len",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "tensor_parallel_size": "tensor_parallel_size",
    "pipeline_parallel_size": "pipeline_parallel_size",
    "max_num_seqs": "max_num_seqs",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "kv_cache_memory_bytes": "kv_cache_memory_bytes",
    "swap_space": "swap_space_gib",
    "block_size": "block_size",
}
# A backslash that continues a command on the next row, joined to it (and that row's "> " prompt).
CONTINUED_ROW = re.compile(r"\\\s*(?:>\s+)?")
# vLLM's short flags for the arguments above.
SHORT_FLAGS = {"-tp": "tensor_parallel_size", "-pp": "pipeline_parallel_size"}
CONFIG_FACTS = {
    "max_seq_len": "max_seq_len",
    "tensor_parallel_size": "tensor_parallel_size",
    "pipeline_parallel_size": "pipeline_parallel_size",
    "data_parallel_size": "data_parallel_size",
}


class LaunchFacts(Transformer[Token, Parts]):
    """The launch messages of grammars/messages.lark."""

    def engine_config(self, c: Children) -> Parts:
        pairs = config_pairs(token(c, "CONFIG_TEXT") or "")
        values = {
            name: number(pairs[key]) for key, name in CONFIG_FACTS.items() if re.fullmatch(r"\d+", pairs.get(key, ""))
        }
        version = (token(c, "VERSION_TAG") or "").strip("()v")
        words = {"vllm_version": version} if version else {}
        # "device_config=cpu", or the older "device_config=device(type='cuda')".
        device = re.search(r"(cpu|cuda|xpu|tpu|hpu|npu|rocm|neuron)", pairs.get("device_config", ""))
        if device:
            words["device"] = device[1]
        return {"values": values, "text": words, "args": pairs}

    def engine_loop_failed(self, c: Children) -> Parts:
        # V1's dump of the failed step prints the engine's config as its start did, and the scheduler's state.
        if stats := token(c, "SCHEDULER_STATS"):
            return {"values": _scheduler_stats(stats)}
        return self.engine_config(c) if token(c, "CONFIG_TEXT") else {}

    def non_default_args(self, c: Children) -> Parts:
        return _launch_args(literal_dict, token(c, "DICT_TEXT") or "")

    def launch_command(self, c: Children) -> Parts:
        return {"values": _flag_values(token(c, "COMMAND_TEXT") or "")}

    def namespace_args(self, c: Children) -> Parts:
        return _launch_args(namespace_args, token(c, "NAMESPACE_TEXT") or "")

    def max_len_in_use(self, c: Children) -> Parts:
        return {"values": named(("max_seq_len",), c)}

    def auto_fit(self, c: Children) -> Parts:
        return {"values": named(("requested_max_len", "max_seq_len"), c)}

    def auto_fit_full(self, c: Children) -> Parts:
        return {"values": named(("max_seq_len",), c)}

    def server_version(self, c: Children) -> Parts:
        return {"text": {"vllm_version": token(c, "VERSION") or ""}}

    def unsloth_gpu(self, c: Children) -> Parts:
        return {"values": {"total_gpu_gib": numbers(c)[1]}}

    def unsloth_vllm_start(self, c: Children) -> Parts:
        return {"values": {"gpu_memory_utilization": numbers(c)[0] / 100}}


# SchedulerStats' fields, by the names the stats lines' facts have.
SCHEDULER_FIELDS = {
    "num_running_reqs": "running_reqs",
    "num_waiting_reqs": "waiting_reqs",
    "kv_cache_usage": "kv_cache_usage_pct",
}


def _scheduler_stats(text: str) -> dict[str, Number]:
    """Running and waiting requests and the KV cache's use, in percent, from V1's SchedulerStats repr."""
    fields = config_pairs(text.removeprefix("SchedulerStats("))
    values: dict[str, Number] = {}
    for field, name in SCHEDULER_FIELDS.items():
        with contextlib.suppress(KeyError, ValueError):
            values[name] = number(fields[field])
    if "kv_cache_usage_pct" in values:  # a fraction
        values["kv_cache_usage_pct"] = round(float(values["kv_cache_usage_pct"]) * 100, 2)
    return values


def _flag_values(command: str) -> dict[str, Number]:
    """The numbers a command line's flags set, as launch-argument facts: "--max-model-len 8192" (or
    "--max-model-len=8192"), vLLM's short "-tp 2"."""
    # Rows a backslash continued, read on into (their shell's "> " prompt too): one command line.
    command = CONTINUED_ROW.sub(" ", command)
    try:
        words = shlex.split(command)
    except ValueError:  # an unclosed quote: a paste cut mid-command
        return {}
    values: dict[str, Number] = {}
    for word, following in zip(words, [*words[1:], ""], strict=False):
        flag, _, value = word.partition("=") if word.startswith("--") else (word, "", "")
        key = SHORT_FLAGS.get(flag) or flag.removeprefix("--").replace("-", "_")
        name = ARG_FACTS.get(key) if flag.startswith("-") else None
        value = value or following
        if name and re.fullmatch(r"\d+(?:\.\d+)?", value):
            values[name] = number(value)
    return values


def _launch_args(read: Callable[[str], tuple[dict[str, Any], list[str]] | None], text: str) -> Parts:
    """The launch arguments of a printed dict or Namespace, read without evaluating it; one a cut line
    ended is read as far as its last whole argument, and says so (no command is rebuilt from it)."""
    whole = whole_items(text)
    parsed = read(text if whole is None else whole)
    if parsed is None:
        return {"text": {"unreadable": "launch arguments too large or not a literal"}}
    args, left_out = parsed
    values = {
        name: args[key]
        for key, name in ARG_FACTS.items()
        if isinstance(args.get(key), (int, float)) and not isinstance(args.get(key), bool)
    }
    notes = {}
    # A flag whose value is no literal cannot be given back: the command is not rebuilt from a partial dict.
    if left_out:
        notes["unreadable"] = "no literal: " + ", ".join(left_out)
    if whole is not None:
        notes["cut"] = "the arguments end where the line was cut"
    return {"values": values, "args": args, **({"text": notes} if notes else {})}
