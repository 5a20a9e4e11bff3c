"""Parsed messages to facts: each rule of grammars/messages.lark becomes a fact's named values and words."""

from __future__ import annotations

import contextlib
import re
import shlex
from collections.abc import Callable
from typing import Any

from lark import Token, Transformer

from advisor.parse.facts import Number, config_pairs, gib, literal_dict, namespace_args, number, whole_items

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
# An exit the operator asked for: systemd's signal names, and 128 + SIGINT / SIGTERM as shells and docker report them.
OPERATOR_SIGNALS = {"TERM", "INT"}
OPERATOR_EXIT_CODES = {130, 143}
# vLLM's stops that only a signal's handler logs, naming none: the engine core's (0.2x) and the API server's (0.32 on).
SIGNALLED_STOPS = ("Shutdown initiated", "API server: shutdown triggered")
# The signals torchrun's "failed (exitcode: -N)" may name (Linux's numbers: the log's machine ran Linux).
ELASTIC_SIGNALS = {2: "INT", 6: "ABRT", 7: "BUS", 9: "KILL", 11: "SEGV", 15: "TERM"}
# The signal behind each of a shell's reports of a program it ran dying ("Killed", "Aborted (core dumped)"),
# and behind a crashing process's own report ("*** SIGSEGV received", "Fatal Python error: Bus error").
SIGNAL_WORDS = {
    "Killed": "KILL",
    "Aborted": "ABRT",
    "ABRT": "ABRT",
    "Segmentation fault": "SEGV",
    "SEGV": "SEGV",
    "Bus error": "BUS",
    "BUS": "BUS",
    "Floating point exception": "FPE",
    # The same reports in the shell locales the grammar reads (glibc's and bash's translations).
    "段错误": "SEGV",
    "已杀死": "KILL",
    "已放弃": "ABRT",
    "总线错误": "BUS",
    "程式記憶體區段錯誤": "SEGV",
    "強制結束": "KILL",
    "中止": "ABRT",
    "匯流排錯誤": "BUS",
    "強制終了": "KILL",
    "バスエラー": "BUS",
    "セグメンテーションフォルト": "SEGV",
    "세그멘테이션 오류": "SEGV",
    "죽었음": "KILL",
    "중지됨": "ABRT",
    "버스 오류": "BUS",
    "세그먼테이션 오류": "SEGV",
    "Ошибка сегментирования": "SEGV",
    "Убито": "KILL",
    "Аварийный останов": "ABRT",
    "Ошибка шины": "BUS",
    "Ошибка сегментации": "SEGV",
    "Убит": "KILL",
    "FPE": "FPE",
    "ILL": "ILL",
}
# What the stats lines report of the moment, rather than of the run's configuration.
STATE_NAMES = frozenset(STAT_FACTS.values()) | {"engine"}
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

# A rule's children as lark passes them (tokens, and the dicts of sub-rules), and the dict each rule returns.
Children = list[Any]
Parts = dict[str, Any]

# A frame in vLLM's package: ".../site-packages/vllm/engine/llm_engine.py" (not a script "vllm_cli.py"), or
# in a platform plugin's, whose workers and model runners subclass vLLM's and keep their functions' names;
# a path the poster cut to the package ("vllm/v1/worker/gpu_worker.py") too.
VLLM_PATH = re.compile(r"(?:^|(?<=[/\\]))vllm(?:_ascend|_gaudi|_omni|_metal|_spyre|_rbln|_kunlun|_mlu|_musa)?[/\\]")
# The `vllm` command's own script (".../bin/vllm"), which pip writes to call vLLM's CLI: vLLM's process.
CONSOLE_SCRIPT = re.compile(r"[/\\]bin[/\\]vllm$")


# What an exception's message says vLLM refuses, in the wordings a family of raises shares across
# releases ("... with FP8 KV cache not yet supported", "FP8 KV cache on CPU requires ...", "Cannot find
# the config file for gptq") that no one grammar line covers: the setting it names, for S203 and S204.
REFUSALS = (
    (
        "quantization",
        re.compile(
            r"(?i)cannot find the config file for|quantiz[a-z]*(?: method| scheme| config)?[^.]{0,80}?"
            r"(?:not supported|unsupported|requires|only supports?|is not available)"
            r"|(?:does not support|not supported for|unsupported)[^.]{0,40}?quantiz"
        ),
    ),
    (
        "kv_cache_dtype",
        re.compile(
            r"(?i)(?:(?:fp8|nvfp4)[ _-]?kv|kv[ _-]?cache[ _-]?dtype|cache_dtype)[^.]{0,80}?"
            r"(?:not (?:yet )?supported|unsupported|requires|only supports?|incompatible)"
            r"|(?:does not support|doesn.t support|not supported for|unsupported)[^.]{0,40}?"
            r"(?:(?:fp8|nvfp4)[ _-]?kv|kv[ _-]?cache[ _-]?dtype|cache_dtype)"
        ),
    ),
)


def refused(message: str) -> str:
    """The settings an exception's message says vLLM refuses ("quantization", "kv_cache_dtype"), comma
    separated; "" for none."""
    return ",".join(name for name, wording in REFUSALS if wording.search(message[:2000]))


# How a process ended that said nothing of why (Python's resource tracker cleaned up after it).
REASON_UNSAID = (
    "it logged no error of its own as it ended; most often the kernel's OOM killer (host memory) or a "
    "scheduler's limit killed it (see dmesg)"
)


def _numbers(children: Children) -> list[Number]:
    return [
        gib(c) if c.type in ("SIZE", "SIZE_OR_NUMBER") and not _bare(c) else number(c)
        for c in children
        if isinstance(c, Token) and c.type in ("NUMBER", "SIZE", "SIZE_OR_NUMBER")
    ]


def _bare(token: Token) -> bool:
    return not re.search(r"[A-Za-z]", token)


def _token(children: Children, kind: str) -> str | None:
    return next((str(c) for c in children if isinstance(c, Token) and c.type == kind), None)


def _parts(children: Children) -> Parts:
    """Merge the dicts returned by sub-rules."""
    merged: Parts = {}
    for child in children:
        if isinstance(child, dict):
            merged.update(child)
    return merged


def _named(names: tuple[str, ...], children: Children) -> dict[str, Number]:
    return dict(zip(names, _numbers(children), strict=False))


# XLA's words for memory a compilation could not have: its compiler's, or a compiled program's room.
COMPILATION_OOM = ("compile permanent error", "Error loading program")


class ToFacts(Transformer[Token, Parts]):
    """Turns a parsed message into (kind, values, text, args); rule names are the kinds."""

    # Sub-rules return plain dicts of values that their parent merges.
    def v0_capacity(self, c: Children) -> Parts:
        return _named(("max_tokens_in_kv_cache",), c)

    def v1_shortfall(self, c: Children) -> Parts:
        return {**_named(("kv_needed_gib", "kv_available_gib"), c), **_parts(c)}

    def estimate(self, c: Children) -> Parts:
        return _named(("estimated_max_model_len",), c)

    def below_utilization(self, c: Children) -> Parts:
        return _named(("gpu_memory_utilization", "requested_gib"), c)

    def memory_summary_tail(self, c: Children) -> Parts:
        return {**_named(("gpu_memory_utilization", "requested_gib"), c), **_parts(c)}

    def usage_split(self, c: Children) -> Parts:
        return _named(("weights_gib", "activation_peak_gib", "non_torch_gib", "cuda_graph_gib"), c)

    def kv_in_use(self, c: Children) -> Parts:
        return _named(("kv_available_gib",), c)

    def usage_consumed(self, c: Children) -> Parts:
        return _named(("consumed_gib", "activation_peak_gib", "cuda_graph_gib"), c)

    def oom_new(self, c: Children) -> Parts:
        return _named(("gpu_index", "total_gpu_gib", "free_gpu_gib"), c)

    def oom_old(self, c: Children) -> Parts:
        # torch_npu adds "current active" before "free"; its workspace allocator gives neither.
        index, total, *held, free = _numbers(c)
        allocated = {"allocated_gib": held[0]} if held else {}
        return {"gpu_index": index, "total_gpu_gib": total, **allocated, "free_gpu_gib": free}

    def oom_reserved(self, c: Children) -> Parts:
        return _named(("gpu_index", "total_gpu_gib", "allocated_gib"), c)

    def profile_pair(self, c: Children) -> Parts:
        name = PROFILE_FACTS.get(str(c[0]))
        return {name: _numbers(c)[0]} if name else {}

    def stat_pair(self, c: Children) -> Parts:
        label = str(c[0]).strip()
        return {STAT_FACTS.get(label, re.sub(r"\W+", "_", label.lower()) + "_value"): _numbers(c)[0]}

    # Message rules return the fact's parts.
    def kv_cache_error(self, c: Children) -> Parts:
        return {"values": {"max_seq_len": _numbers(c)[0], **_parts(c)}}

    def free_memory_below_utilization(self, c: Children) -> Parts:
        # "cuda:0" names the backend and a device index: the backend is the part before the colon.
        return {
            "values": {**_named(("free_gpu_gib", "total_gpu_gib"), c), **_parts(c)},
            "text": {"device": (_token(c, "DEVICE") or "").split(":")[0]},
        }

    memory_summary = free_memory_below_utilization

    def cpu_memory_below_utilization(self, c: Children) -> Parts:
        return {
            "values": _named(
                ("numa_node", "free_gpu_gib", "total_gpu_gib", "gpu_memory_utilization", "requested_gib"), c
            ),
            "text": {"device": "cpu"},
        }

    def cpu_kv_memory_unavailable(self, c: Children) -> Parts:
        return {
            "values": _named(("numa_node", "free_gpu_gib", "total_gpu_gib", "kv_requested_gib"), c),
            "text": {"device": "cpu"},
        }

    def gpu_blocks(self, c: Children) -> Parts:
        device = {"text": {"device": "cpu"}} if (_token(c, "A_DEVICE_BLOCKS") or "").endswith("cpu blocks:") else {}
        return {"values": _named(("gpu_blocks", "cpu_blocks"), c), **device}

    def gpu_blocks_override(self, c: Children) -> Parts:
        # The blocks the memory profile found room for, then the flag's, which vLLM allocates.
        profiled, override = _numbers(c)[-2:]
        return {"values": {"gpu_blocks": override, "profiled_gpu_blocks": profiled}}

    def kv_cache_size(self, c: Children) -> Parts:
        # "CPU KV cache size", "XPU KV cache size": the device; "GPU" names none in particular.
        device = (_token(c, "A_KV_CACHE_SIZE") or "GPU").split()[0].lower()
        return {"values": _named(("kv_cache_tokens",), c), "text": {"device": device} if device != "gpu" else {}}

    def concurrency(self, c: Children) -> Parts:
        return {"values": _named(("max_seq_len", "max_concurrency"), c)}

    def weights(self, c: Children) -> Parts:
        if _token(c, "OF_DEVICE_MEMORY"):  # the Gaudi fork: the weights, then the device's used/total
            weights, _used, total = _numbers(c)
            return {"values": {"weights_gib": weights, "total_gpu_gib": total}}
        return {"values": _named(("weights_gib", "load_seconds"), c)}

    def device_memory_split(self, c: Children) -> Parts:
        free, _usable, utilization, _graphs, kv = _numbers(c)
        return {"values": {"free_gpu_gib": free, "gpu_memory_utilization": utilization, "kv_available_gib": kv}}

    def hbm_statistics(self, c: Children) -> Parts:
        total, _cap, _used, kv = _numbers(c)
        return {"values": {"total_gpu_gib": total, "kv_available_gib": kv}}

    def memory_profile(self, c: Children) -> Parts:
        return {"values": _parts(c)}

    def profile_row(self, c: Children) -> Parts:
        label = str(c[0]).strip()
        return {"values": {PROFILE_FACTS[label]: _numbers(c)[0]}}

    def instance_can_use(self, c: Children) -> Parts:
        found = _numbers(c)
        names = ("total_gpu_gib", "gpu_memory_utilization", "usable_gib") if len(found) == 3 else ("usable_gib",)
        return {"values": dict(zip(names, found, strict=False))}

    def weights_take(self, c: Children) -> Parts:
        return {"values": _named(("weights_gib", "non_torch_gib", "activation_peak_gib", "kv_available_gib"), c)}

    def kv_available(self, c: Children) -> Parts:
        return {"values": _named(("kv_available_gib",), c)}

    def kv_reserved(self, c: Children) -> Parts:
        return {"values": _named(("free_gpu_gib", "kv_reserved_gib"), c)}

    def cpu_kv_reserved(self, c: Children) -> Parts:
        return {"values": _named(("kv_available_gib", "total_gpu_gib", "numa_node"), c), "text": {"device": "cpu"}}

    def graph_captured(self, c: Children) -> Parts:
        return {"values": _named(("capture_seconds", "cuda_graph_gib"), c)}

    def graph_estimate(self, c: Children) -> Parts:
        return {"values": _named(("cuda_graph_estimate_gib",), c)}

    def graph_pool(self, c: Children) -> Parts:
        return {"values": _named(("cuda_graph_gib", "cuda_graph_estimate_gib"), c)}

    def utilization_hint(self, c: Children) -> Parts:
        return {"values": _named(("gpu_memory_utilization",), c)}

    def preemption(self, c: Children) -> Parts:
        mode = _token(c, "PREEMPTION_MODE") or ""
        return {"text": {"preemption_mode": mode.rsplit(".", 1)[-1]}}

    def nccl_collectives(self, c: Children) -> Parts:
        return {"values": _named(("nccl_seq_num",), c)}

    def preemption_count(self, c: Children) -> Parts:
        return {"values": _named(("preemptions",), c)}

    def stats(self, c: Children) -> Parts:
        found = _numbers(c)
        engine = {"engine": found.pop(0)} if _token(c, "A_ENGINE_ID") else {}
        first = "throughput" if _token(c, "A_THROUGHPUT") else "prompt_throughput"
        values = {**engine, first: found[0], **_parts(c)}
        # "CPU KV cache usage" is the swap space beside a GPU cache (V0), but the cache itself
        # on the CPU backend, where no GPU figure is printed.
        cpu_usage = values.pop("cpu_kv_cache_usage_value", None)
        if cpu_usage is not None:
            values["swap_usage_pct" if "kv_cache_usage_pct" in values else "kv_cache_usage_pct"] = cpu_usage
        return {"values": values}

    def oom_held(self, c: Children) -> Parts:
        return {"values": {"pytorch_allocated_gib": _numbers(c)[0]}}

    def cuda_oom(self, c: Children) -> Parts:
        return {"values": {"tried_to_allocate_gib": _numbers(c)[0], **_parts(c)}}

    def engine_config(self, c: Children) -> Parts:
        pairs = config_pairs(_token(c, "CONFIG_TEXT") or "")
        values = {
            name: number(pairs[key]) for key, name in CONFIG_FACTS.items() if re.fullmatch(r"\d+", pairs.get(key, ""))
        }
        version = (_token(c, "VERSION_TAG") or "").strip("()v")
        words = {"vllm_version": version} if version else {}
        # "device_config=cpu", or the older "device_config=device(type='cuda')".
        device = re.search(r"(cpu|cuda|xpu|tpu|hpu|npu|rocm|neuron)", pairs.get("device_config", ""))
        if device:
            words["device"] = device[1]
        return {"values": values, "text": words, "args": pairs}

    def engine_loop_failed(self, c: Children) -> Parts:
        # V1's dump of the failed step prints the engine's config as its start did, and the scheduler's state.
        if stats := _token(c, "SCHEDULER_STATS"):
            return {"values": _scheduler_stats(stats)}
        return self.engine_config(c) if _token(c, "CONFIG_TEXT") else {}

    def non_default_args(self, c: Children) -> Parts:
        return _launch_args(literal_dict, _token(c, "DICT_TEXT") or "")

    def launch_command(self, c: Children) -> Parts:
        return {"values": _flag_values(_token(c, "COMMAND_TEXT") or "")}

    def namespace_args(self, c: Children) -> Parts:
        return _launch_args(namespace_args, _token(c, "NAMESPACE_TEXT") or "")

    def max_len_in_use(self, c: Children) -> Parts:
        return {"values": _named(("max_seq_len",), c)}

    def auto_fit(self, c: Children) -> Parts:
        return {"values": _named(("requested_max_len", "max_seq_len"), c)}

    def auto_fit_full(self, c: Children) -> Parts:
        return {"values": _named(("max_seq_len",), c)}

    def server_version(self, c: Children) -> Parts:
        return {"text": {"vllm_version": _token(c, "VERSION") or ""}}

    def unsloth_gpu(self, c: Children) -> Parts:
        return {"values": {"total_gpu_gib": _numbers(c)[1]}}

    def unsloth_vllm_start(self, c: Children) -> Parts:
        return {"values": {"gpu_memory_utilization": _numbers(c)[0] / 100}}

    def tp_heads_mismatch(self, c: Children) -> Parts:
        return {"values": _named(("num_attention_heads", "tensor_parallel_size"), c)}

    def pp_layers_mismatch(self, c: Children) -> Parts:
        return {"values": _named(("num_hidden_layers", "pipeline_parallel_size"), c)}

    def max_len_exceeds_model(self, c: Children) -> Parts:
        values = _named(("max_seq_len", "derived_max_model_len"), c)
        values["derived_max_model_len"] = int(values["derived_max_model_len"])
        return {"values": values, "text": {"derived_from": _token(c, "DERIVED_KEY") or ""}}

    def unsupported_quantization(self, c: Children) -> Parts:
        # compressed-tensors names no method, only its scheme.
        method = _token(c, "NAME") or ("compressed-tensors" if _token(c, "A_QUANT_SCHEME") else None)
        return {
            "values": _named(("min_compute_capability", "gpu_compute_capability"), c),
            "text": {"quantization": method} if method else {},
        }

    def supervisor_exit(self, c: Children) -> Parts:
        """The exit and whether it is a failure: a stop the operator asked for (SIGTERM, SIGINT) is not."""
        status, signal = _token(c, "NUMBER"), _token(c, "NAME") or ""
        values = {"exit_status": number(status)} if status is not None else {}
        if _token(c, "A_KILLED_FOR_MEMORY"):
            return {"values": values, "text": {"outcome": "failed", "signal": "KILL", "reason": "out of memory"}}
        if _token(c, "A_RESTART_LOOP"):
            return {"values": values, "text": {"outcome": "failed", "reason": "restart loop"}}
        if _token(c, "A_RAY_WORKER_DIED"):
            return {"values": values, "text": {"outcome": "failed", "reason": "Ray worker died"}}
        if _token(c, "A_NATIVE_BACKTRACE"):
            return {"text": {"outcome": "failed", "reason": "crashed"}}
        if _token(c, "A_RESOURCE_TRACKER_EXIT"):
            return {"text": {"outcome": "ended", "reason": REASON_UNSAID}}
        if death := _token(c, "A_SHELL_SIGNAL_DEATH") or _token(c, "A_CRASH_SIGNAL"):
            signal = next(name for word, name in SIGNAL_WORDS.items() if word in death)
            return {"values": values, "text": {"outcome": "failed", "signal": signal, "reason": "killed by a signal"}}
        code = values.get("exit_status")
        if _token(c, "A_ELASTIC_FAILED") and isinstance(code, int) and code < 0:  # torchrun: minus the signal
            signal = ELASTIC_SIGNALS.get(-code, "")
        stopped = signal in OPERATOR_SIGNALS or code in OPERATOR_EXIT_CODES
        outcome = "stopped" if stopped else "clean" if code == 0 else "failed"
        return {"values": values, "text": {"outcome": outcome, "signal": signal}}

    def unsupported_kv_dtype(self, c: Children) -> Parts:
        return {"text": {"kv_cache_dtype": (_token(c, "A_KV_DTYPE_UNSUPPORTED") or "").split()[0]}}

    def fp8_type_unsupported(self, c: Children) -> Parts:
        return {"text": {"fp8_type": (_token(c, "A_FP8_TYPE_UNSUPPORTED") or "").split()[1]}}

    def unsupported_architecture(self, c: Children) -> Parts:
        return {"text": {"architectures": _token(c, "ARCH_LIST") or ""}}

    def request_too_long(self, c: Children) -> Parts:
        return {"values": _named(("max_seq_len", "requested_tokens", "prompt_tokens", "max_tokens"), c)}

    def request_too_long_input(self, c: Children) -> Parts:
        return {"values": _named(("max_seq_len", "requested_tokens"), c)}

    def request_too_long_total(self, c: Children) -> Parts:
        return {"values": _named(("max_seq_len", "max_tokens", "prompt_tokens", "requested_tokens"), c)}

    def prompt_too_long(self, c: Children) -> Parts:
        return {"values": _named(("long_prompt_tokens", "max_seq_len"), c)}

    prompt_too_long_v1 = prompt_too_long

    def max_tokens_negative(self, c: Children) -> Parts:
        return {"values": _named(("negative_max_tokens",), c)}

    def prompt_exceeds_blocks(self, c: Children) -> Parts:
        return {"values": _named(("blocks_prompt_tokens",), c)}

    def http_error(self, c: Children) -> Parts:
        return {"values": _named(("http_status",), c)}

    def offline_progress(self, c: Children) -> Parts:
        percent = re.search(r"(\d{1,3})%", _token(c, "A_OFFLINE_PROGRESS") or "")
        return {"values": {"progress_pct": int(percent[1])}} if percent else {}

    def cuda_error_oom(self, c: Children) -> Parts:
        # A compiler's or a compiled program's memory: the stage that compiles (timeline.place).
        compiling = any(word in (_token(c, "A_CUDA_ERROR_OOM") or "") for word in COMPILATION_OOM)
        return {"text": {"compiling": "yes"}} if compiling else {}

    def shm_wait(self, c: Children) -> Parts:
        return {"values": _named(("wait_seconds",), c)}

    ray_group_wait = shm_wait

    def ray_devices_short(self, c: Children) -> Parts:
        return {"values": _named(("required_devices", "total_devices"), c)}

    def shutdown(self, c: Children) -> Parts:
        # A signal's handler names it; the engine core's graceful stop ("Shutdown initiated") and the API
        # server's "shutdown triggered" are logged by the handlers of one alone.
        words = _token(c, "A_SHUTDOWN") or ""
        return {"text": {"signalled": "yes"}} if "SIG" in words or words.startswith(SIGNALLED_STOPS) else {}

    def ready(self, c: Children) -> Parts:
        return {"values": _named(("init_seconds",), c)}

    def platform(self, c: Children) -> Parts:
        return {"text": {"device": (_token(c, "NAME") or "").lower().rstrip(".")}}  # "cuda." ends the sentence

    def cpu_build(self, c: Children) -> Parts:
        return {"text": {"device": "cpu"}}

    def api_server_entry(self, c: Children) -> Parts:
        return {"text": {"entry_point": "api_server"}}

    def cpu_numa_nodes_short(self, c: Children) -> Parts:
        nodes = (_token(c, "NODE_LIST") or "[]").strip("[]").split(",")
        return {
            "values": {"local_world_size": _numbers(c)[0], "numa_nodes": len([n for n in nodes if n.strip()])},
            "text": {"device": "cpu"},
        }

    def frame(self, c: Children) -> Parts:
        # IPython names the method with its class and arguments: "ExecutorBase.__init__(self, ...)".
        text = {"function": (_token(c, "FUNC") or "").split("(")[0].rsplit(".", 1)[-1]}
        path = _token(c, "PATH") or _token(c, "A_IPYTHON_FILE") or _token(c, "A_COLAB_FILE") or ""
        # The package's last folder of that name: a source checkout is often itself named vllm ("/opt/vllm/vllm/").
        if inside := next(reversed(list(VLLM_PATH.finditer(path))), None):
            text["package"] = "vllm"  # the frame runs vLLM's own code
            text["module"] = path[inside.end() :].replace("\\", "/")  # v1/worker/gpu_worker.py
        elif CONSOLE_SCRIPT.search(path):
            text["package"] = "vllm"
        return {"text": text}

    def device_fault(self, c: Children) -> Parts:
        return {"text": {"device": "npu"}} if _token(c, "A_CANN_INNER_ERROR") is not None else {}

    def nccl_error(self, c: Children) -> Parts:
        text = {}
        if _token(c, "A_NCCL_WATCHDOG") is not None:  # PyTorch's watchdog aborts the process
            text["by"] = "watchdog"
        if _token(c, "DEVICE_CAUSE") is not None:  # its thread died of the device's error, not of NCCL's
            text["cause"] = "device"
        return {"text": text} if text else {}

    def serving_call(self, c: Children) -> Parts:
        return {"text": {"function": _token(c, "A_SERVING_CALL") or ""}}

    def local_devices_short(self, c: Children) -> Parts:
        return {"values": _named(("local_world_size", "local_devices"), c)}

    def worker_method(self, c: Children) -> Parts:
        return {"text": {"function": (_token(c, "A_WORKER_METHOD") or "").rsplit(" ", 1)[-1].strip("'")}}

    def exception(self, c: Children) -> Parts:
        return {"text": {"type": _token(c, "A_EXCEPTION") or ""}}

    def __default__(self, data: str, children: Children, meta: Any) -> Parts:
        # Messages without numbers (no_cache_blocks, nccl_error, ready, ...) carry their kind only.
        return {}


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
