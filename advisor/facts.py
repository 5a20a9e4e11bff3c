"""Typed facts: what one log line states, turned from a parse tree into named numbers."""
from __future__ import annotations

import ast
import re
from typing import Any

from lark import Token, Transformer
from pydantic import BaseModel, ConfigDict, Field, field_validator

Number = int | float
# No figure vLLM prints (bytes, tokens, GiB, ratios) lies outside these bounds; outside them a
# number is junk or crafted, and arithmetic on it would overflow or produce inf/nan in the JSON.
MAX_FIGURE = 1e15
MIN_FIGURE = 1e-6


class Fact(BaseModel):
    """One statement of the log: its kind (a grammar rule), line, numbers and words."""

    model_config = ConfigDict(frozen=True)

    kind: str
    line: int
    values: dict[str, Number] = Field(default_factory=dict)
    text: dict[str, str] = Field(default_factory=dict)
    args: dict[str, Any] = Field(default_factory=dict)  # launch flags, for the corrected command
    process: str | None = None
    level: str | None = None

    @field_validator("values")
    @classmethod
    def _plausible_figures(cls, values: dict[str, Number]) -> dict[str, Number]:
        """Drop `1e999`, `nan` and absurd magnitudes instead of letting them poison the arithmetic."""
        return {name: value for name, value in values.items() if plausible(value)}


def plausible(value: Number) -> bool:
    # Compared, not converted: float() of a 400-digit int overflows; nan fails every comparison.
    return value == 0 or MIN_FIGURE <= abs(value) <= MAX_FIGURE


# Bytes per unit; logs say GB where vLLM computed GiB, so GB counts as GiB.
_UNIT_BYTES = {"GiB": 2**30, "GB": 2**30, "MiB": 2**20, "MB": 2**20, "KiB": 2**10, "KB": 2**10, "B": 1}
_SIZE = re.compile(r"(-?[\d,]+(?:\.\d+)?(?:e[+-]?\d+)?)\s*([A-Za-z]+)?")
# Bound what ast.literal_eval sees: a crafted args line must not exhaust memory or recursion.
MAX_ARGS_TEXT = 64 * 1024


def number(text: str) -> Number:
    """'1,048,576' -> 1048576, '0.90' -> 0.9."""
    text = text.replace(",", "")
    value = float(text)
    if "." not in text and "e" not in text.lower() and value.is_integer():
        return int(value)
    return value


def gib(text: str) -> float:
    """A size as printed ('739.81 MiB', '2.89GiB', '14.9888 GB') in GiB, 4 decimals for converted units."""
    match = _SIZE.fullmatch(text.strip())
    amount, unit = number(match[1]), (match[2] or "GiB")
    if unit in ("GiB", "GB"):
        return float(amount)
    return round(amount * _UNIT_BYTES[unit] / 2**30, 4)


def literal_dict(text: str) -> dict[str, Any] | None:
    """Parse a printed Python dict safely; None when it is too big, too deep or not a dict."""
    if len(text) > MAX_ARGS_TEXT:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) and all(isinstance(k, str) for k in value) else None


def namespace_args(text: str) -> dict[str, Any] | None:
    """Parse 'Namespace(a=1, b='x')' keyword by keyword with literal_eval; never eval."""
    if len(text) > MAX_ARGS_TEXT:
        return None
    try:
        call = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(call, ast.Call):
        return None
    args = {}
    for keyword in call.keywords:
        try:
            args[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, SyntaxError, TypeError, RecursionError):
            continue  # a value that is not a literal (a function, a type) is not a flag we rebuild
    return args


def config_pairs(text: str) -> dict[str, str]:
    """Split an engine config string on top-level ', key=' (values hold reprs and nested dicts)."""
    pairs, depth, quote, start = {}, 0, "", 0
    boundaries = []
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote and text[i - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            boundaries.append(i)
    for end in boundaries + [len(text)]:
        key, sep, value = text[start:end].strip().partition("=")
        if sep and re.fullmatch(r"[a-z_]+", key):
            pairs[key] = value.strip()
        start = end + 1
    return pairs


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
CONFIG_FACTS = {"max_seq_len": "max_seq_len", "tensor_parallel_size": "tensor_parallel_size",
                "pipeline_parallel_size": "pipeline_parallel_size", "data_parallel_size": "data_parallel_size"}
# Labels of the periodic stats line, as fact names.
STAT_FACTS = {
    "Avg prompt throughput": "prompt_throughput",
    "Avg generation throughput": "generation_throughput",
    "Running": "running_reqs",
    "Waiting": "waiting_reqs",
    "Pending": "waiting_reqs",  # V0 called the waiting queue "Pending"
    "Swapped": "swapped_reqs",
    "GPU KV cache usage": "kv_cache_usage_pct",
    "KV cache usage": "kv_cache_usage_pct",
    "Prefix cache hit rate": "prefix_cache_hit_pct",
    "Preemptions": "preemptions",
}
PROFILE_FACTS = {
    "total_gpu_memory": "total_gpu_gib",
    "kv_cache_size": "kv_available_gib",
    "available_kv_cache_memory": "kv_available_gib",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "non_torch_memory": "non_torch_gib",
    "peak_torch_memory": "peak_torch_gib",
    "PyTorch activation peak memory": "activation_peak_gib",
    "initial_memory_usage": "initial_memory_gib",
    "memory_usage_post_profile": "post_profile_memory_gib",
}


def _numbers(children) -> list[Number]:
    return [gib(c) if c.type in ("SIZE", "SIZE_OR_NUMBER") and not _bare(c) else number(c)
            for c in children if isinstance(c, Token) and c.type in ("NUMBER", "SIZE", "SIZE_OR_NUMBER")]


def _bare(token: Token) -> bool:
    return not re.search(r"[A-Za-z]", token)


def _token(children, kind: str) -> str | None:
    return next((str(c) for c in children if isinstance(c, Token) and c.type == kind), None)


def _parts(children) -> dict:
    """Merge the dicts returned by sub-rules."""
    merged = {}
    for child in children:
        if isinstance(child, dict):
            merged.update(child)
    return merged


def _named(names: tuple[str, ...], children) -> dict[str, Number]:
    return dict(zip(names, _numbers(children)))


class ToFacts(Transformer):
    """Turns a parsed message into (kind, values, text, args); rule names are the kinds."""

    # Sub-rules return plain dicts of values that their parent merges.
    def v0_capacity(self, c):
        return _named(("max_tokens_in_kv_cache",), c)

    def v1_shortfall(self, c):
        return {**_named(("kv_needed_gib", "kv_available_gib"), c), **_parts(c)}

    def estimate(self, c):
        return _named(("estimated_max_model_len",), c)

    def below_utilization(self, c):
        return _named(("gpu_memory_utilization", "requested_gib"), c)

    def memory_summary_tail(self, c):
        return {**_named(("gpu_memory_utilization", "requested_gib"), c), **_parts(c)}

    def usage_split(self, c):
        return _named(("weights_gib", "activation_peak_gib", "non_torch_gib", "cuda_graph_gib"), c)

    def usage_consumed(self, c):
        return _named(("consumed_gib", "activation_peak_gib", "cuda_graph_gib"), c)

    def oom_new(self, c):
        return _named(("gpu_index", "total_gpu_gib", "free_gpu_gib"), c)

    def oom_old(self, c):
        return _named(("gpu_index", "total_gpu_gib", "allocated_gib", "free_gpu_gib"), c)

    def profile_pair(self, c):
        name = PROFILE_FACTS.get(str(c[0]))
        return {name: _numbers(c)[0]} if name else {}

    def stat_pair(self, c):
        label = str(c[0]).strip()
        return {STAT_FACTS.get(label, re.sub(r"\W+", "_", label.lower()) + "_value"): _numbers(c)[0]}

    # Message rules return the fact's parts.
    def kv_cache_error(self, c):
        return {"values": {"max_seq_len": _numbers(c)[0], **_parts(c)}}

    def free_memory_below_utilization(self, c):
        return {"values": {**_named(("free_gpu_gib", "total_gpu_gib"), c), **_parts(c)},
                "text": {"device": _token(c, "DEVICE") or ""}}

    memory_summary = free_memory_below_utilization

    def cpu_memory_below_utilization(self, c):
        return {"values": _named(("numa_node", "free_gpu_gib", "total_gpu_gib", "gpu_memory_utilization",
                                  "requested_gib"), c)}

    def gpu_blocks(self, c):
        return {"values": _named(("gpu_blocks", "cpu_blocks"), c)}

    def gpu_blocks_override(self, c):
        return {"values": {"gpu_blocks": _numbers(c)[-1]}}

    def kv_cache_size(self, c):
        return {"values": _named(("kv_cache_tokens",), c)}

    def concurrency(self, c):
        return {"values": _named(("max_seq_len", "max_concurrency"), c)}

    def weights(self, c):
        return {"values": _named(("weights_gib", "load_seconds"), c)}

    def memory_profile(self, c):
        return {"values": _parts(c)}

    def profile_row(self, c):
        label = str(c[0]).strip()
        return {"values": {PROFILE_FACTS[label]: _numbers(c)[0]}}

    def instance_can_use(self, c):
        found = _numbers(c)
        names = ("total_gpu_gib", "gpu_memory_utilization", "usable_gib") if len(found) == 3 else ("usable_gib",)
        return {"values": dict(zip(names, found))}

    def weights_take(self, c):
        return {"values": _named(("weights_gib", "non_torch_gib", "activation_peak_gib", "kv_available_gib"), c)}

    def kv_available(self, c):
        return {"values": _named(("kv_available_gib",), c)}

    def kv_reserved(self, c):
        return {"values": _named(("free_gpu_gib", "kv_reserved_gib"), c)}

    def cpu_kv_reserved(self, c):
        return {"values": _named(("kv_available_gib", "total_gpu_gib", "numa_node"), c)}

    def graph_captured(self, c):
        return {"values": _named(("capture_seconds", "cuda_graph_gib"), c)}

    def graph_estimate(self, c):
        return {"values": _named(("cuda_graph_estimate_gib",), c)}

    def graph_pool(self, c):
        return {"values": _named(("cuda_graph_gib", "cuda_graph_estimate_gib"), c)}

    def utilization_hint(self, c):
        return {"values": _named(("gpu_memory_utilization",), c)}

    def preemption(self, c):
        mode = _token(c, "PREEMPTION_MODE") or ""
        return {"text": {"preemption_mode": mode.rsplit(".", 1)[-1]}}

    def preemption_count(self, c):
        return {"values": _named(("preemptions",), c)}

    def stats(self, c):
        found = _numbers(c)
        engine = {"engine": found.pop(0)} if _token(c, "A_ENGINE_ID") else {}
        values = {**engine, "prompt_throughput": found[0], **_parts(c)}
        # "CPU KV cache usage" is the swap space beside a GPU cache (V0), but the cache itself
        # on the CPU backend, where no GPU figure is printed.
        cpu_usage = values.pop("cpu_kv_cache_usage_value", None)
        if cpu_usage is not None:
            values["swap_usage_pct" if "kv_cache_usage_pct" in values else "kv_cache_usage_pct"] = cpu_usage
        return {"values": values}

    def cuda_oom(self, c):
        return {"values": {"tried_to_allocate_gib": _numbers(c)[0], **_parts(c)}}

    def engine_config(self, c):
        pairs = config_pairs(_token(c, "CONFIG_TEXT") or "")
        values = {name: number(pairs[key]) for key, name in CONFIG_FACTS.items()
                  if re.fullmatch(r"\d+", pairs.get(key, ""))}
        version = (_token(c, "VERSION_TAG") or "").strip("()v")
        return {"values": values, "text": {"vllm_version": version} if version else {}, "args": pairs}

    def non_default_args(self, c):
        return _launch_args(literal_dict(_token(c, "DICT_TEXT") or ""))

    def namespace_args(self, c):
        return _launch_args(namespace_args(_token(c, "NAMESPACE_TEXT") or ""))

    def max_len_in_use(self, c):
        return {"values": _named(("max_seq_len",), c)}

    def auto_fit(self, c):
        return {"values": _named(("requested_max_len", "max_seq_len"), c)}

    def auto_fit_full(self, c):
        return {"values": _named(("max_seq_len",), c)}

    def server_version(self, c):
        return {"text": {"vllm_version": _token(c, "VERSION") or ""}}

    def tp_heads_mismatch(self, c):
        return {"values": _named(("num_attention_heads", "tensor_parallel_size"), c)}

    def pp_layers_mismatch(self, c):
        return {"values": _named(("num_hidden_layers", "pipeline_parallel_size"), c)}

    def max_len_exceeds_model(self, c):
        values = _named(("max_seq_len", "derived_max_model_len"), c)
        values["derived_max_model_len"] = int(values["derived_max_model_len"])
        return {"values": values, "text": {"derived_from": _token(c, "DERIVED_KEY") or ""}}

    def unsupported_quantization(self, c):
        return {"values": _named(("min_compute_capability", "gpu_compute_capability"), c),
                "text": {"quantization": _token(c, "NAME") or ""}}

    def unsupported_architecture(self, c):
        return {"text": {"architectures": _token(c, "ARCH_LIST") or ""}}

    def request_too_long(self, c):
        return {"values": _named(("max_seq_len", "requested_tokens", "prompt_tokens", "max_tokens"), c)}

    def prompt_too_long(self, c):
        return {"values": _named(("long_prompt_tokens", "max_seq_len"), c)}

    prompt_too_long_v1 = prompt_too_long

    def http_error(self, c):
        return {"values": _named(("http_status",), c)}

    def ready(self, c):
        return {"values": _named(("init_seconds",), c)}

    def frame(self, c):
        return {"text": {"function": (_token(c, "FUNC") or "").rstrip("(")}}

    def exception(self, c):
        return {"text": {"type": _token(c, "A_EXCEPTION") or ""}}

    def __default__(self, data, children, meta):
        # Messages without numbers (no_cache_blocks, nccl_error, ready, ...) carry their kind only.
        return {}


def _launch_args(args: dict[str, Any] | None) -> dict:
    if args is None:
        return {"text": {"unreadable": "launch arguments too large or not a literal"}}
    values = {name: args[key] for key, name in ARG_FACTS.items()
              if isinstance(args.get(key), (int, float)) and not isinstance(args.get(key), bool)}
    return {"values": values, "args": args}
