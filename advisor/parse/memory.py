"""Facts of the messages about memory: the KV cache's capacity and shortfall, the memory profile, out of
memory errors and what PyTorch held."""

from __future__ import annotations

from lark import Token, Transformer

from advisor.parse.children import Children, Parts, merged, named, numbers, token

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
# XLA's words for memory a compilation could not have: its compiler's, or a compiled program's room.
COMPILATION_OOM = ("compile permanent error", "Error loading program")


class MemoryFacts(Transformer[Token, Parts]):
    """The memory and capacity messages of grammars/messages.lark."""

    # Sub-rules return plain dicts of values that their parent merges.
    def v0_capacity(self, c: Children) -> Parts:
        return named(("max_tokens_in_kv_cache",), c)

    def v1_shortfall(self, c: Children) -> Parts:
        return {**named(("kv_needed_gib", "kv_available_gib"), c), **merged(c)}

    def estimate(self, c: Children) -> Parts:
        return named(("estimated_max_model_len",), c)

    def below_utilization(self, c: Children) -> Parts:
        return named(("gpu_memory_utilization", "requested_gib"), c)

    def memory_summary_tail(self, c: Children) -> Parts:
        return {**named(("gpu_memory_utilization", "requested_gib"), c), **merged(c)}

    def usage_split(self, c: Children) -> Parts:
        return named(("weights_gib", "activation_peak_gib", "non_torch_gib", "cuda_graph_gib"), c)

    def kv_in_use(self, c: Children) -> Parts:
        return named(("kv_available_gib",), c)

    def usage_consumed(self, c: Children) -> Parts:
        return named(("consumed_gib", "activation_peak_gib", "cuda_graph_gib"), c)

    def oom_new(self, c: Children) -> Parts:
        return named(("gpu_index", "total_gpu_gib", "free_gpu_gib"), c)

    def oom_old(self, c: Children) -> Parts:
        # torch_npu adds "current active" before "free"; its workspace allocator gives neither.
        index, total, *held, free = numbers(c)
        allocated = {"allocated_gib": held[0]} if held else {}
        return {"gpu_index": index, "total_gpu_gib": total, **allocated, "free_gpu_gib": free}

    def oom_reserved(self, c: Children) -> Parts:
        return named(("gpu_index", "total_gpu_gib", "allocated_gib"), c)

    def profile_pair(self, c: Children) -> Parts:
        name = PROFILE_FACTS.get(str(c[0]))
        return {name: numbers(c)[0]} if name else {}

    # Message rules return the fact's parts.
    def kv_cache_error(self, c: Children) -> Parts:
        return {"values": {"max_seq_len": numbers(c)[0], **merged(c)}}

    def free_memory_below_utilization(self, c: Children) -> Parts:
        # "cuda:0" names the backend and a device index: the backend is the part before the colon.
        return {
            "values": {**named(("free_gpu_gib", "total_gpu_gib"), c), **merged(c)},
            "text": {"device": (token(c, "DEVICE") or "").split(":")[0]},
        }

    memory_summary = free_memory_below_utilization

    def cpu_memory_below_utilization(self, c: Children) -> Parts:
        return {
            "values": named(
                ("numa_node", "free_gpu_gib", "total_gpu_gib", "gpu_memory_utilization", "requested_gib"), c
            ),
            "text": {"device": "cpu"},
        }

    def cpu_kv_memory_unavailable(self, c: Children) -> Parts:
        return {
            "values": named(("numa_node", "free_gpu_gib", "total_gpu_gib", "kv_requested_gib"), c),
            "text": {"device": "cpu"},
        }

    def gpu_blocks(self, c: Children) -> Parts:
        device = {"text": {"device": "cpu"}} if (token(c, "A_DEVICE_BLOCKS") or "").endswith("cpu blocks:") else {}
        return {"values": named(("gpu_blocks", "cpu_blocks"), c), **device}

    def gpu_blocks_override(self, c: Children) -> Parts:
        # The blocks the memory profile found room for, then the flag's, which vLLM allocates.
        profiled, override = numbers(c)[-2:]
        return {"values": {"gpu_blocks": override, "profiled_gpu_blocks": profiled}}

    def kv_cache_size(self, c: Children) -> Parts:
        # "CPU KV cache size", "XPU KV cache size": the device; "GPU" names none in particular.
        device = (token(c, "A_KV_CACHE_SIZE") or "GPU").split()[0].lower()
        return {"values": named(("kv_cache_tokens",), c), "text": {"device": device} if device != "gpu" else {}}

    def concurrency(self, c: Children) -> Parts:
        return {"values": named(("max_seq_len", "max_concurrency"), c)}

    def weights(self, c: Children) -> Parts:
        if token(c, "OF_DEVICE_MEMORY"):  # the Gaudi fork: the weights, then the device's used/total
            weights, _used, total = numbers(c)
            return {"values": {"weights_gib": weights, "total_gpu_gib": total}}
        return {"values": named(("weights_gib", "load_seconds"), c)}

    def device_memory_split(self, c: Children) -> Parts:
        free, _usable, utilization, _graphs, kv = numbers(c)
        return {"values": {"free_gpu_gib": free, "gpu_memory_utilization": utilization, "kv_available_gib": kv}}

    def hbm_statistics(self, c: Children) -> Parts:
        total, _cap, _used, kv = numbers(c)
        return {"values": {"total_gpu_gib": total, "kv_available_gib": kv}}

    def memory_profile(self, c: Children) -> Parts:
        return {"values": merged(c)}

    def profile_row(self, c: Children) -> Parts:
        label = str(c[0]).strip()
        return {"values": {PROFILE_FACTS[label]: numbers(c)[0]}}

    def instance_can_use(self, c: Children) -> Parts:
        found = numbers(c)
        names = ("total_gpu_gib", "gpu_memory_utilization", "usable_gib") if len(found) == 3 else ("usable_gib",)
        return {"values": dict(zip(names, found, strict=False))}

    def weights_take(self, c: Children) -> Parts:
        return {"values": named(("weights_gib", "non_torch_gib", "activation_peak_gib", "kv_available_gib"), c)}

    def kv_available(self, c: Children) -> Parts:
        return {"values": named(("kv_available_gib",), c)}

    def kv_reserved(self, c: Children) -> Parts:
        return {"values": named(("free_gpu_gib", "kv_reserved_gib"), c)}

    def memory_requested(self, c: Children) -> Parts:
        middle = "gpu_memory_utilization" if token(c, "UTIL") else "free_after_profiling_gib"
        return {"values": named(("free_gpu_gib", middle, "requested_gib"), c)}

    def profiling_took(self, c: Children) -> Parts:
        names = ("profile_seconds", "non_kv_cache_gib", "torch_peak_increase_gib", "non_torch_increase_gib")
        return {"values": named((*names, "weights_gib"), c)}

    def cpu_kv_reserved(self, c: Children) -> Parts:
        return {"values": named(("kv_available_gib", "total_gpu_gib", "numa_node"), c), "text": {"device": "cpu"}}

    def graph_captured(self, c: Children) -> Parts:
        return {"values": named(("capture_seconds", "cuda_graph_gib"), c)}

    def warmup_oom(self, c: Children) -> Parts:
        return {"values": named(("dummy_requests",), c)}

    def graph_estimate(self, c: Children) -> Parts:
        return {"values": named(("cuda_graph_estimate_gib",), c)}

    def graph_pool(self, c: Children) -> Parts:
        return {"values": named(("cuda_graph_gib", "cuda_graph_estimate_gib"), c)}

    def utilization_hint(self, c: Children) -> Parts:
        return {"values": named(("gpu_memory_utilization",), c)}

    def oom_held(self, c: Children) -> Parts:
        return {"values": {"pytorch_allocated_gib": numbers(c)[0]}}

    def cuda_oom(self, c: Children) -> Parts:
        return {"values": {"tried_to_allocate_gib": numbers(c)[0], **merged(c)}}

    def cuda_error_oom(self, c: Children) -> Parts:
        # A compiler's or a compiled program's memory: the stage that compiles (timeline.place).
        compiling = any(word in (token(c, "A_CUDA_ERROR_OOM") or "") for word in COMPILATION_OOM)
        return {"text": {"compiling": "yes"}} if compiling else {}
