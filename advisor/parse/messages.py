"""Parsed messages to facts: each rule of grammars/messages.lark becomes a fact's named values and words."""

from __future__ import annotations

import re
from typing import Any

from advisor.parse.children import Children, Parts, merged, named, numbers, token
from advisor.parse.facts import number
from advisor.parse.launch import LaunchFacts
from advisor.parse.memory import MemoryFacts

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


class ToFacts(MemoryFacts, LaunchFacts):
    """Turns a parsed message into (kind, values, text, args); rule names are the kinds."""

    def stat_pair(self, c: Children) -> Parts:
        label = str(c[0]).strip()
        return {STAT_FACTS.get(label, re.sub(r"\W+", "_", label.lower()) + "_value"): numbers(c)[0]}

    def preemption(self, c: Children) -> Parts:
        mode = token(c, "PREEMPTION_MODE") or ""
        return {"text": {"preemption_mode": mode.rsplit(".", 1)[-1]}}

    def nccl_collectives(self, c: Children) -> Parts:
        return {"values": named(("nccl_seq_num",), c)}

    def preemption_count(self, c: Children) -> Parts:
        return {"values": named(("preemptions",), c)}

    def stats(self, c: Children) -> Parts:
        found = numbers(c)
        engine = {"engine": found.pop(0)} if token(c, "A_ENGINE_ID") else {}
        first = "throughput" if token(c, "A_THROUGHPUT") else "prompt_throughput"
        values = {**engine, first: found[0], **merged(c)}
        # "CPU KV cache usage" is the swap space beside a GPU cache (V0), but the cache itself
        # on the CPU backend, where no GPU figure is printed.
        cpu_usage = values.pop("cpu_kv_cache_usage_value", None)
        if cpu_usage is not None:
            values["swap_usage_pct" if "kv_cache_usage_pct" in values else "kv_cache_usage_pct"] = cpu_usage
        return {"values": values}

    def tp_heads_mismatch(self, c: Children) -> Parts:
        return {"values": named(("num_attention_heads", "tensor_parallel_size"), c)}

    def pp_layers_mismatch(self, c: Children) -> Parts:
        return {"values": named(("num_hidden_layers", "pipeline_parallel_size"), c)}

    def max_len_exceeds_model(self, c: Children) -> Parts:
        values = named(("max_seq_len", "derived_max_model_len"), c)
        values["derived_max_model_len"] = int(values["derived_max_model_len"])
        return {"values": values, "text": {"derived_from": token(c, "DERIVED_KEY") or ""}}

    def unsupported_quantization(self, c: Children) -> Parts:
        # compressed-tensors names no method, only its scheme.
        method = token(c, "NAME") or ("compressed-tensors" if token(c, "A_QUANT_SCHEME") else None)
        return {
            "values": named(("min_compute_capability", "gpu_compute_capability"), c),
            "text": {"quantization": method} if method else {},
        }

    def supervisor_exit(self, c: Children) -> Parts:
        """The exit and whether it is a failure: a stop the operator asked for (SIGTERM, SIGINT) is not."""
        status, signal = token(c, "NUMBER"), token(c, "NAME") or ""
        values = {"exit_status": number(status)} if status is not None else {}
        if token(c, "A_KILLED_FOR_MEMORY"):
            return {"values": values, "text": {"outcome": "failed", "signal": "KILL", "reason": "out of memory"}}
        if token(c, "A_RESTART_LOOP"):
            return {"values": values, "text": {"outcome": "failed", "reason": "restart loop"}}
        if token(c, "A_RAY_WORKER_DIED"):
            return {"values": values, "text": {"outcome": "failed", "reason": "Ray worker died"}}
        if token(c, "A_NATIVE_BACKTRACE"):
            return {"text": {"outcome": "failed", "reason": "crashed"}}
        if token(c, "A_RESOURCE_TRACKER_EXIT"):
            return {"text": {"outcome": "ended", "reason": REASON_UNSAID}}
        if death := token(c, "A_SHELL_SIGNAL_DEATH") or token(c, "A_CRASH_SIGNAL"):
            signal = next(name for word, name in SIGNAL_WORDS.items() if word in death)
            return {"values": values, "text": {"outcome": "failed", "signal": signal, "reason": "killed by a signal"}}
        code = values.get("exit_status")
        if token(c, "A_ELASTIC_FAILED") and isinstance(code, int) and code < 0:  # torchrun: minus the signal
            signal = ELASTIC_SIGNALS.get(-code, "")
        stopped = signal in OPERATOR_SIGNALS or code in OPERATOR_EXIT_CODES
        outcome = "stopped" if stopped else "clean" if code == 0 else "failed"
        return {"values": values, "text": {"outcome": outcome, "signal": signal}}

    def unsupported_kv_dtype(self, c: Children) -> Parts:
        return {"text": {"kv_cache_dtype": (token(c, "A_KV_DTYPE_UNSUPPORTED") or "").split()[0]}}

    def fp8_type_unsupported(self, c: Children) -> Parts:
        return {"text": {"fp8_type": (token(c, "A_FP8_TYPE_UNSUPPORTED") or "").split()[1]}}

    def unsupported_architecture(self, c: Children) -> Parts:
        return {"text": {"architectures": token(c, "ARCH_LIST") or ""}}

    def request_too_long(self, c: Children) -> Parts:
        return {"values": named(("max_seq_len", "requested_tokens", "prompt_tokens", "max_tokens"), c)}

    def request_too_long_input(self, c: Children) -> Parts:
        return {"values": named(("max_seq_len", "requested_tokens"), c)}

    def request_too_long_total(self, c: Children) -> Parts:
        return {"values": named(("max_seq_len", "max_tokens", "prompt_tokens", "requested_tokens"), c)}

    def prompt_too_long(self, c: Children) -> Parts:
        return {"values": named(("long_prompt_tokens", "max_seq_len"), c)}

    prompt_too_long_v1 = prompt_too_long

    def max_tokens_negative(self, c: Children) -> Parts:
        return {"values": named(("negative_max_tokens",), c)}

    def prompt_exceeds_blocks(self, c: Children) -> Parts:
        return {"values": named(("blocks_prompt_tokens",), c)}

    def http_error(self, c: Children) -> Parts:
        return {"values": named(("http_status",), c)}

    def offline_progress(self, c: Children) -> Parts:
        percent = re.search(r"(\d{1,3})%", token(c, "A_OFFLINE_PROGRESS") or "")
        return {"values": {"progress_pct": int(percent[1])}} if percent else {}

    def shm_wait(self, c: Children) -> Parts:
        return {"values": named(("wait_seconds",), c)}

    ray_group_wait = shm_wait

    def ray_devices_short(self, c: Children) -> Parts:
        return {"values": named(("required_devices", "total_devices"), c)}

    def shutdown(self, c: Children) -> Parts:
        # A signal's handler names it; the engine core's graceful stop ("Shutdown initiated") and the API
        # server's "shutdown triggered" are logged by the handlers of one alone.
        words = token(c, "A_SHUTDOWN") or ""
        return {"text": {"signalled": "yes"}} if "SIG" in words or words.startswith(SIGNALLED_STOPS) else {}

    def ready(self, c: Children) -> Parts:
        return {"values": named(("init_seconds",), c)}

    def platform(self, c: Children) -> Parts:
        return {"text": {"device": (token(c, "NAME") or "").lower().rstrip(".")}}  # "cuda." ends the sentence

    def cpu_build(self, c: Children) -> Parts:
        return {"text": {"device": "cpu"}}

    def api_server_entry(self, c: Children) -> Parts:
        return {"text": {"entry_point": "api_server"}}

    def cpu_numa_nodes_short(self, c: Children) -> Parts:
        nodes = (token(c, "NODE_LIST") or "[]").strip("[]").split(",")
        return {
            "values": {"local_world_size": numbers(c)[0], "numa_nodes": len([n for n in nodes if n.strip()])},
            "text": {"device": "cpu"},
        }

    def frame(self, c: Children) -> Parts:
        # IPython names the method with its class and arguments: "ExecutorBase.__init__(self, ...)".
        text = {"function": (token(c, "FUNC") or "").split("(")[0].rsplit(".", 1)[-1]}
        path = token(c, "PATH") or token(c, "A_IPYTHON_FILE") or token(c, "A_COLAB_FILE") or ""
        # The package's last folder of that name: a source checkout is often itself named vllm ("/opt/vllm/vllm/").
        if inside := next(reversed(list(VLLM_PATH.finditer(path))), None):
            text["package"] = "vllm"  # the frame runs vLLM's own code
            text["module"] = path[inside.end() :].replace("\\", "/")  # v1/worker/gpu_worker.py
        elif CONSOLE_SCRIPT.search(path):
            text["package"] = "vllm"
        return {"text": text}

    def device_fault(self, c: Children) -> Parts:
        return {"text": {"device": "npu"}} if token(c, "A_CANN_INNER_ERROR") is not None else {}

    def nccl_error(self, c: Children) -> Parts:
        text = {}
        if token(c, "A_NCCL_WATCHDOG") is not None:  # PyTorch's watchdog aborts the process
            text["by"] = "watchdog"
        if token(c, "DEVICE_CAUSE") is not None:  # its thread died of the device's error, not of NCCL's
            text["cause"] = "device"
        return {"text": text} if text else {}

    def serving_call(self, c: Children) -> Parts:
        return {"text": {"function": token(c, "A_SERVING_CALL") or ""}}

    def local_devices_short(self, c: Children) -> Parts:
        return {"values": named(("local_world_size", "local_devices"), c)}

    def worker_method(self, c: Children) -> Parts:
        return {"text": {"function": (token(c, "A_WORKER_METHOD") or "").rsplit(" ", 1)[-1].strip("'")}}

    def exception(self, c: Children) -> Parts:
        return {"text": {"type": token(c, "A_EXCEPTION") or ""}}

    def __default__(self, data: str, children: Children, meta: Any) -> Parts:
        # Messages without numbers (no_cache_blocks, nccl_error, ready, ...) carry their kind only.
        return {}
