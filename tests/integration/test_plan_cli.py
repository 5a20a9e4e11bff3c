"""`vllm-advisor plan` as a user runs it: its outputs, weights from safetensors headers, one-line errors."""

from __future__ import annotations

import json
import shlex
import shutil
import struct
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT

CONFIGS = FIXTURES / "plan/configs"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "advisor", "plan", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def one_line_error(done: subprocess.CompletedProcess, says: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("vllm-advisor: "), done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr and done.stdout == ""


def write_safetensors(path, tensors: dict[str, tuple[str, list[int], int]]) -> int:
    """A real safetensors file (header length, JSON header, data); returns the data's size."""
    header, offset = {}, 0
    for name, (dtype, shape, item) in tensors.items():
        size = item
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(offset))
    return offset


def test_text_output_marks_every_input_and_gives_a_command(tmp_path):
    folder = tmp_path / "my model"  # a space: the command must quote it
    shutil.copytree(CONFIGS / "llama-3.1-8b", folder)
    done = run(str(folder), "--gpu-memory", "79.19GiB", "--max-model-len", "131072")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "KV bytes per token per GPU: 131,072 B" in out
    assert "[read: config.json num_key_value_heads]" in out and "[given: --gpu-memory 79.19GiB]" in out
    assert "(estimate)" in out  # the budget and the weights (no safetensors here) are estimates
    command = out.split("command that fits (length first, then sequences):\n", 1)[1].splitlines()[0].strip()
    argv = shlex.split(command)
    assert argv[:3] == ["vllm", "serve", str(folder)]
    assert argv[argv.index("--max-model-len") + 1] == "131072"
    assert "--kv-cache-dtype fp8:" in out and "--tensor-parallel-size 2:" in out
    assert "--gpu-memory-utilization 0.94:" in out


def test_json_output_has_figures_with_formulas_and_sources():
    done = run(str(CONFIGS / "mistral-7b-v0.1"), "--kv-cache-memory-bytes", "4GiB", "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    tokens = document["figures"]["KV cache tokens"]
    assert tokens["value"] > 0 and "max model length" in tokens["formula"]
    assert document["figures"]["KV cache budget per GPU"]["value"] == 4 * 1024**3
    assert {i["source"] for i in document["inputs"]} <= {"read", "given", "assumed", "estimated"}
    assert document["layer_kinds"] == ["sliding"] * 32


def test_weights_are_read_from_safetensors_headers_exactly(tmp_path):
    shutil.copy(CONFIGS / "llama-3.1-8b/config.json", tmp_path)
    first = write_safetensors(
        tmp_path / "model-00001-of-00002.safetensors", {"embed": ("BF16", [1000, 64], 2), "norm": ("F32", [64], 4)}
    )
    second = write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"head": ("BF16", [64, 1000], 2)})
    document = json.loads(run(str(tmp_path), "--kv-cache-memory-bytes", "1GiB", "-tp", "2", "--format", "json").stdout)
    weights = document["figures"]["weights per GPU"]
    assert weights["source"] == "read"
    assert weights["value"] == (first + second) // 2 == (1000 * 64 * 2 + 64 * 4 + 64 * 1000 * 2) // 2


def test_a_file_that_is_not_safetensors_is_one_line(tmp_path):
    shutil.copy(CONFIGS / "llama-3.1-8b/config.json", tmp_path)
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", 20) + b"not json at all!!!!!")
    one_line_error(run(str(tmp_path), "--kv-cache-memory-bytes", "1GiB"), "not a safetensors file")


@pytest.mark.parametrize(
    "args, says",
    [
        (["/nonexistent/model"], "no such folder"),
        ([str(CONFIGS / "llama-3.1-8b/config.json")], "not a folder"),
        ([str(FIXTURES / "plan")], "no config.json"),
        ([str(CONFIGS / "llama-3.1-8b"), "--gpu", "rtx-3090", "-tp", "3"], "does not divide the 32 attention heads"),
        ([str(CONFIGS / "llama-3.1-8b"), "--gpu-memory", "80XB"], "not a size"),
        ([str(CONFIGS / "llama-3.1-8b"), "--gpu", "tpu-v9"], "unknown --gpu"),
        ([str(CONFIGS / "llama-3.1-8b")], "give the GPU's memory"),
        ([str(CONFIGS / "llama-3.1-8b"), "--gpu", "rtx-3090", "--max-model-len", "0"], "must be a positive"),
        ([str(CONFIGS / "llama-3.1-8b"), "--gpu", "rtx-3090", "--gpu-memory-utilization", "1.5"], "must be in (0, 1]"),
        ([str(CONFIGS / "llama-3.1-8b"), "--gpu", "rtx-3090", "--kv-cache-dtype", "int3"], "--kv-cache-dtype"),
        ([str(CONFIGS / "llama-3.1-8b"), "--gpu", "rtx-3090", "--gpu-memory", "8GiB"], "not allowed with"),
        ([], "MODEL_DIR"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, says):
    one_line_error(run(*args), says)


def test_config_without_needed_keys_is_one_line(tmp_path):
    config = json.loads((CONFIGS / "llama-3.1-8b/config.json").read_text())
    del config["num_hidden_layers"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    one_line_error(run(str(tmp_path), "--kv-cache-memory-bytes", "1GiB"), "config.json has no num_hidden_layers")
    config.update(num_hidden_layers="thirty-two")
    (tmp_path / "config.json").write_text(json.dumps(config))
    one_line_error(run(str(tmp_path), "--kv-cache-memory-bytes", "1GiB"), "not a whole number")
    (tmp_path / "config.json").write_text("{not json")
    one_line_error(run(str(tmp_path), "--kv-cache-memory-bytes", "1GiB"), "cannot read it as JSON")


def test_weights_that_do_not_fit_are_one_line(tmp_path):
    shutil.copy(CONFIGS / "llama-3.1-8b/config.json", tmp_path)
    write_safetensors(tmp_path / "model.safetensors", {"w": ("BF16", [1024, 1024, 12], 2)})  # 24 MiB
    one_line_error(run(str(tmp_path), "--gpu-memory", "20MiB"), "nothing is left for the KV cache")
