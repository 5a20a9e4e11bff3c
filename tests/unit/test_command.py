"""The corrected command: rebuilt from the log, one flag changed in place, always shell-quoted."""

from __future__ import annotations

import shlex

from conftest import analyze_fixture

from advisor import command
from advisor.report.formats import command_lines


def test_rebuilt_from_non_default_args_with_one_change_in_place():
    # 088 ran the module (its deprecation warning says so): the corrected command keeps that entry point.
    report = analyze_fixture("088-")
    module = "python -m vllm.entrypoints.openai.api_server --model /models/tiny-llama"
    assert report.command.original == f"{module} --port 18001 --max-model-len 32768 --kv-cache-memory-bytes 4000000"
    assert report.command.corrected == f"{module} --port 18001 --max-model-len 12288 --kv-cache-memory-bytes 4000000"


def test_a_log_that_names_no_entry_point_gets_vllm_serve():
    report = analyze_fixture("099-")  # vLLM 0.26: no deprecation warning for the module
    assert report.command.corrected.startswith("vllm serve /root/.cache/vllm-advisor/models/tiny-llama ")


def test_a_long_command_wraps_into_shell_continuations_that_paste_as_the_same_command():
    printed = (
        "python -m vllm.entrypoints.openai.api_server --model /models/tiny-llama --port 18001 "
        "--max-model-len 12288 --kv-cache-memory-bytes 4000000 --served-model-name 'my model'"
    )
    lines = command_lines.wrapped(printed, 60)
    assert all(len(line) <= 60 for line in lines) and all(line.endswith(" \\") for line in lines[:-1])
    assert shlex.split(" ".join(line.removesuffix(" \\") for line in lines)) == shlex.split(printed)
    assert any(line.strip().startswith("--max-model-len 12288") for line in lines)  # a flag stays with its value


def test_flag_change_alone_when_the_log_has_no_command():
    report = analyze_fixture("007-")
    assert report.command.original is None and report.command.corrected is None  # nothing to correct
    assert report.command.change == {"--max-model-len": "158720"}
    assert report.command.change_args == "--max-model-len 158720"


def test_user_command_is_corrected_including_equals_and_underscore_forms():
    report = analyze_fixture(
        "007-", user_command="vllm serve org/model --max_model_len=1048576 --tensor-parallel-size 8"
    )
    assert report.command.corrected == "vllm serve org/model --max-model-len 158720 --tensor-parallel-size 8"


def test_apply_sets_replaces_removes_and_switches():
    argv = ["vllm", "serve", "m", "--gpu-memory-utilization", "0.9", "--enforce-eager"]
    assert command.apply(argv, {"--gpu-memory-utilization": None}) == ["vllm", "serve", "m", "--enforce-eager"]
    assert command.apply(argv, {"--enforce-eager": None, "--max-num-seqs": "4"})[-2:] == ["--max-num-seqs", "4"]
    assert command.apply(["vllm", "serve", "m"], {"--enforce-eager": ""}) == ["vllm", "serve", "m", "--enforce-eager"]


def test_namespace_dump_keeps_only_non_default_arguments():
    args = {
        "model": "m",
        "port": 8000,
        "tensor_parallel_size": 2,
        "swap_space": 4,
        "max_model_len": 32768,
        "gpu_memory_utilization": 0.95,
        "enforce_eager": True,
        "disable_log_stats": False,
    }
    assert command.from_args(args, command.NAMESPACE_DEFAULTS) == [
        "vllm",
        "serve",
        "m",
        "--tensor-parallel-size",
        "2",
        "--max-model-len",
        "32768",
        "--gpu-memory-utilization",
        "0.95",
        "--enforce-eager",
    ]


def test_engine_config_line_gives_the_model_and_memory_flags():
    argv = command.from_config(
        {
            "model": "'/models/x'",
            "max_seq_len": "4096",
            "tensor_parallel_size": "1",
            "quantization": "None",
            "enforce_eager": "True",
        }
    )
    assert argv == ["vllm", "serve", "/models/x", "--max-model-len", "4096", "--enforce-eager"]


def test_printed_commands_round_trip_through_the_shell_quoting():
    model = "m; rm -rf / $(touch x) `id`"
    argv = command.apply(["vllm", "serve", model], {"--max-model-len": "1024"})
    printed = command.render(argv)
    assert shlex.split(printed) == argv
