"""Each message wording, parsed from a real line of a fixture into its fact kind and values."""
from __future__ import annotations

import pytest
from conftest import FIXTURES, ROOT, fixture_line

from advisor.ingest import sources
from advisor.parse.grammar import AnchorSearch, anchor_regex, find_anchor, parse_line, split_envelope

# (fixture, line number, fact kind, values the fact must carry)
WORDINGS = [
    ("001-", 5, "kv_cache_error", {"max_seq_len": 29000, "max_tokens_in_kv_cache": 23648}),  # V0
    ("005-", 1, "kv_cache_error", {"max_seq_len": 1048576, "kv_needed_gib": 24.0, "kv_available_gib": 9.97}),  # V1 "models's"
    ("007-", 1, "kv_cache_error", {"estimated_max_model_len": 199552, "kv_needed_gib": 44.25}),  # newest, no backticks
    ("009-", 1, "kv_cache_error", {"estimated_max_model_len": 251136, "kv_available_gib": 1.88}),  # with estimate
    ("088-", 89, "kv_cache_error", {"kv_available_gib": 0.0, "estimated_max_model_len": 15488}),  # CPU backend
    ("reference-formats", 29, "kv_cache_error", {"kv_needed_gib": 4.0, "kv_available_gib": 2.5}),  # 0.7 - 0.8.2 "GB"
    ("015-", 3, "no_cache_blocks", {}),
    ("019-", 7, "no_cache_blocks", {}),  # only the raise statement survives
    ("reference-formats", 35, "no_cache_blocks", {}),  # "Cannot auto-fit max_model_len: not enough GPU memory"
    ("020-", 1, "free_memory_below_utilization", {"free_gpu_gib": 67.24, "requested_gib": 71.33}),
    ("022-", 1, "free_memory_below_utilization", {"total_gpu_gib": 22.05}),  # device named cuda:1
    ("reference-formats", 7, "cpu_memory_below_utilization", {"free_gpu_gib": 7.03, "gpu_memory_utilization": 0.99}),
    ("reference-formats", 4, "memory_summary", {"weights_gib": 15.0, "cuda_graph_gib": 0.8}),
    ("reference-formats", 5, "memory_summary", {"consumed_gib": 16.2, "gpu_memory_utilization": 0.92}),
    ("001-", 3, "gpu_blocks", {"gpu_blocks": 1478, "cpu_blocks": 2048}),  # "# GPU blocks"
    ("044-", 3, "gpu_blocks", {"gpu_blocks": 1952}),  # pasted without "# "
    ("058-", 5, "gpu_blocks", {"gpu_blocks": 7191, "cpu_blocks": 512}),  # "# cuda blocks" inside a k9s box
    ("062-", 13, "gpu_blocks", {"gpu_blocks": 15745}),  # "num_gpu_blocks is:"
    ("reference-formats", 10, "gpu_blocks_override", {"gpu_blocks": 512}),
    ("046-", 4, "kv_cache_size", {"kv_cache_tokens": 188640}),
    ("089-", 66, "kv_cache_size", {"kv_cache_tokens": 15616}),  # CPU, one line with concurrency
    ("089-", 66, "concurrency", {"max_seq_len": 12288, "max_concurrency": 1.27}),
    ("052-", 9, "concurrency", {"max_seq_len": 131072, "max_concurrency": 56.73}),  # no comma grouping
    ("001-", 1, "weights", {"weights_gib": 14.9888}),  # "Loading model weights took ... GB"
    ("reference-formats", 2, "weights", {"weights_gib": 15.2}),  # "Model loading took ... GiB memory and"
    ("001-", 2, "memory_profile", {"total_gpu_gib": 23.58, "kv_available_gib": 2.89, "gpu_memory_utilization": 0.9}),
    ("reference-formats", 27, "memory_profile", {"kv_available_gib": 4.72}),  # 0.6.4 printed "Gib" once
    ("054-", 9, "profile_row", {"kv_available_gib": 53.29}),  # Dec 2024 table format
    ("058-", 3, "instance_can_use", {"total_gpu_gib": 79.19, "gpu_memory_utilization": 0.9}),
    ("058-", 4, "weights_take", {"weights_gib": 12.55, "kv_available_gib": 56.18}),
    ("046-", 2, "kv_available", {"kv_available_gib": 17.36}),
    ("013-", 5, "kv_reserved", {"free_gpu_gib": 31.16, "kv_reserved_gib": 4.25}),
    ("091-", 54, "cpu_kv_reserved", {"kv_available_gib": 0.01, "total_gpu_gib": 8.34}),
    ("062-", 11, "graph_captured", {"cuda_graph_gib": 0.84}),
    ("067-", 1, "graph_capture_start", {}),
    ("reference-formats", 28, "graph_capture_start", {}),  # V0 "Capturing the model for CUDA graphs"
    ("046-", 1, "graph_estimate", {"cuda_graph_estimate_gib": 0.26}),
    ("046-", 3, "utilization_hint", {"gpu_memory_utilization": 0.7}),
    ("038-", 2, "preemption", {}),
    ("038-", 2, "preemption_count", {"preemptions": 151}),  # total_num_cumulative_preemption
    ("040-", 1, "preemption_count", {"preemptions": 1}),  # total_cumulative_preemption_cnt
    ("038-", 1, "stats", {"running_reqs": 34, "swapped_reqs": 100, "waiting_reqs": 9832, "kv_cache_usage_pct": 99.2}),
    ("091-", 120, "stats", {"running_reqs": 2, "waiting_reqs": 4, "kv_cache_usage_pct": 95.5}),  # V1, CPU cache
    ("reference-formats", 14, "stats", {"preemptions": 7, "engine": 0}),
    ("026-", 1, "cuda_oom", {"tried_to_allocate_gib": 0.875, "free_gpu_gib": 0.7225}),
    ("032-", 1, "cuda_oom", {"total_gpu_gib": 21.67, "free_gpu_gib": 0.004}),  # "capacty"
    ("reference-formats", 17, "cuda_oom", {"total_gpu_gib": 14.62, "free_gpu_gib": 0.0032}),  # torch 1.x
    ("065-", 7, "cuda_error_oom", {}),
    ("026-", 1, "weights_create_failed", {}),
    ("088-", 22, "engine_config", {"max_seq_len": 32768, "tensor_parallel_size": 1}),
    ("088-", 12, "non_default_args", {"max_seq_len": 32768, "kv_cache_memory_bytes": 4000000}),
    ("reference-formats", 20, "namespace_args", {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.95}),
    ("088-", 16, "max_len_in_use", {"max_seq_len": 32768}),
    ("reference-formats", 15, "auto_fit", {"requested_max_len": 131072, "max_seq_len": 40960}),
    ("068-", 1, "tp_heads_mismatch", {"num_attention_heads": 28, "tensor_parallel_size": 8}),
    ("reference-formats", 18, "pp_layers_mismatch", {"num_hidden_layers": 30}),
    ("072-", 1, "max_len_exceeds_model", {"max_seq_len": 4096, "derived_max_model_len": 2048}),
    ("073-", 1, "max_len_exceeds_model", {"max_seq_len": 4096, "derived_max_model_len": 2048}),  # "(None=2048"
    ("075-", 1, "unsupported_quantization", {"min_compute_capability": 75, "gpu_compute_capability": 70}),
    ("076-", 1, "unsupported_quantization", {"min_compute_capability": 80, "gpu_compute_capability": 75}),  # a tuple of fragments
    ("079-", 1, "fp8_type_unsupported", {}),
    ("080-", 1, "unsupported_kv_dtype", {}),  # the sentence goes on on the next line
    ("078-", 2, "weight_kernel", {}),  # Triton shows the kernel it was compiling
    ("087-", 4, "supervisor_exit", {"exit_status": 1}),  # systemd, under journalctl
    ("034-", 7, "serving_call", {}),  # "engine_core.run_busy_loop()" in a cut traceback
    ("034-", 3, "exception_chain", {}),
    ("018-", 3, "platform", {}),  # "Automatically detected platform cuda."
    ("093-", 1, "cpu_build", {}),  # "Triton is installed, but doesn't include CPU backend." (a CPU build only)
    ("093-", 4, "api_server_entry", {}),  # the module's deprecation warning names the entry point
    ("tp-numa-nodes", 56, "cpu_numa_nodes_short", {"local_world_size": 2, "numa_nodes": 1}),
    ("093-", 8, "server_version", {}),  # the start-up banner's "█  version 0.32.0"
    ("reference-formats", 37, "free_memory_below_utilization", {"free_gpu_gib": 20.1, "requested_gib": 72.9}),  # 0.32 on
    ("reference-formats", 38, "cpu_kv_memory_unavailable", {"free_gpu_gib": 1.2, "kv_requested_gib": 4.0}),
    ("reference-formats", 39, "engine_start_failed", {}),  # "Frontend process failed during engine core initialization"
    ("081-", 5, "nccl_error", {}),
    ("083-", 4, "port_in_use", {}),
    ("085-", 1, "unsupported_architecture", {}),
    ("086-", 1, "architecture_inspection_failed", {}),
    ("024-", 2, "engine_start_failed", {}),
    ("088-", 180, "engine_start_failed", {}),
    ("reference-formats", 32, "engine_start_failed", {}),  # "EngineCoreProc failed to start."
    ("reference-formats", 36, "engine_start_failed", {}),  # "Timed out waiting for engine core processes"
    ("089-", 192, "engine_fatal", {}),
    ("reference-formats", 33, "engine_fatal", {}),  # "EngineCore hit an exception"
    ("062-", 12, "ready", {"init_seconds": 44.51}),
    ("089-", 114, "ready", {}),  # uvicorn "Application startup complete."
    ("091-", 131, "shutdown", {}),
    ("118-", 75, "shutdown", {}),  # 0.20.2: "Shutdown initiated (timeout=0)"
    ("074-", 1, "request_too_long", {"max_seq_len": 8192, "requested_tokens": 8203}),
    ("114-", 94, "request_too_long_input", {"max_seq_len": 1008, "requested_tokens": 1921}),  # 0.15.1
    ("123-", 177, "request_too_long_total", {"max_seq_len": 1024, "max_tokens": 16, "prompt_tokens": 1009,
                                            "requested_tokens": 1025}),  # 0.20.2
    ("reference-formats", 22, "prompt_too_long", {"long_prompt_tokens": 9000, "max_seq_len": 8192}),
    ("reference-formats", 30, "prompt_too_long_v1", {"long_prompt_tokens": 9000, "max_seq_len": 8192}),
    ("reference-formats", 31, "prompt_too_long_v1", {"long_prompt_tokens": 1600, "max_seq_len": 1500}),  # encoder
    ("089-", 230, "http_error", {"http_status": 500}),
    ("042-", 1, "swap_space_exhausted", {}),
    ("reference-formats", 25, "swap_space_too_large", {}),
    ("reference-formats", 26, "engine_dead", {}),
    ("reference-formats", 34, "engine_dead", {}),  # "Engine core proc ... died unexpectedly"
    ("reference-formats", 12, "graph_pool", {"cuda_graph_gib": 0.84, "cuda_graph_estimate_gib": 0.8}),
    ("reference-formats", 19, "server_version", {}),
    ("083-", 1, "traceback_start", {}),
    ("083-", 2, "frame", {}),
    ("089-", 229, "exception", {}),
]


@pytest.mark.parametrize("fixture,number,kind,values", WORDINGS,
                         ids=[f"{k}-{f.rstrip('-')}:{n}" for f, n, k, _ in WORDINGS])
def test_wording(fixture, number, kind, values):
    facts = [f for f in parse_line(fixture_line(fixture, number), number) if f.kind == kind]
    assert facts, f"no {kind} in line {number} of {fixture}"
    assert facts[0].values.items() >= values.items()


def test_every_message_rule_has_a_real_sample():
    """Each alternative of the grammar's `message` rule (aliases included) appears in WORDINGS."""
    from advisor.parse.grammar import message_parser
    produced = {str(r.alias or r.origin.name) for r in message_parser().rules}
    text = (ROOT / "grammars" / "messages.lark").read_text()
    block = text.split("?message:", 1)[1].split("\n\n", 1)[0]
    alternatives = {name.strip() for name in block.replace("\n", " ").split("|")}
    aliases = {"free_memory": {"free_memory_below_utilization", "memory_summary"}}
    kinds = set().union(*(aliases.get(a, {a}) for a in alternatives)) & produced
    missing = kinds - {kind for _, _, kind, _ in WORDINGS}
    assert not missing, f"wordings without a sample line: {sorted(missing)}"


def test_exception_counts_only_at_the_start_of_the_body():
    # The ulimit warning quotes "OSError: [Errno 24]" mid-sentence: not an exception.
    facts = parse_line(fixture_line("088-", 11), 11)
    assert not [f for f in facts if f.kind == "exception"]


@pytest.mark.parametrize("fixture,number,process,level", [
    ("019-", 1, "EngineCore_DP0 pid=223840", "ERROR"),
    ("064-", 1, "RayWorkerWrapper pid=2711, ip=████████████", "INFO"),
    ("065-", 1, "VllmWorker rank=3 pid=1090", "ERROR"),
    ("081-", 5, "[rank0]", None),
    ("011-", 3, None, "ERROR"),  # old era: "ERROR 02-07 11:28:26 engine.py:389]"
    ("040-", 1, None, "WARNING"),  # docs example without "]"
])
def test_envelope(fixture, number, process, level):
    envelope = split_envelope(fixture_line(fixture, number))
    assert (envelope.process, envelope.level) == (process, level)


def long_texts() -> list[str]:
    """Every real line of the fixtures, and each run into a long one: real lines, each followed by prose
    full of anchor words that are not anchors, as in a long prompt that quotes code."""
    lines = [line.text for path in sorted(FIXTURES.rglob("*.log")) for line in sources.lines(sources.read_chunks(str(path)))]
    prose = "an Error here, the Exception there, Engine 7 was fine, Shutting, File, blocks and words " * 15
    return lines + [prose + line + prose for line in lines[::25]]


def test_find_anchor_is_the_anchor_regex_search():
    # find_anchor is an optimisation of anchor_regex().search: same match at every start place.
    for text in long_texts():
        search = AnchorSearch(text)  # one search, asked from ever later places, as messages() asks it
        for position in sorted({0, 1, len(text) // 3, len(text) // 2, max(len(text) - 40, 0)}):
            plain = anchor_regex().search(text, position)
            for fast in (find_anchor(text, position), search.find(position)):
                assert (fast and (fast.span(), fast.lastgroup)) == (plain and (plain.span(), plain.lastgroup)), text[:120]


@pytest.mark.parametrize("width", [60, 80, 100, 120, 133, 160, 200])
def test_a_message_hard_wrapped_by_a_terminal_is_read_whole(width):
    # The real KV shortfall of 088 (543 characters behind its process prefix), wrapped at the width
    # as a terminal does, mid-word: the anchor "max seq len (" and the estimate 15488 fall apart.
    from advisor.ingest.sources import Line
    from advisor.parse.continuation import continued_facts
    text = fixture_line("088-", 89)
    rows = [Line(n + 1, text[i:i + width]) for n, i in enumerate(range(0, len(text), width))]
    facts = [f for f in continued_facts(rows, parse_line) if f.kind == "kv_cache_error"]
    assert [f.values for f in facts] == [{"max_seq_len": 32768, "kv_needed_gib": 0.01, "kv_available_gib": 0.0,
                                         "estimated_max_model_len": 15488}]
