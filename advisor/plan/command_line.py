"""`vllm-advisor plan MODEL_DIR [...]`: flags in, a plan out; bad input is one line and exit 2."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from advisor.plan import model, planner, render
from advisor.plan.budget import KNOWN_GPUS, parse_size
from advisor.plan.figures import PlanError
from advisor.plan.request import Request

EXIT_OK, EXIT_USAGE = 0, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise PlanError(f"plan: {message} (see 'vllm-advisor plan --help')")


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="vllm-advisor plan",
        description="What max-model-len and how many sequences fit, with vLLM's own KV cache arithmetic, "
        "from a local model folder (config.json, safetensors headers). Nothing is downloaded.",
    )
    p.add_argument("model_dir", metavar="MODEL_DIR", help="a local folder with config.json (and *.safetensors)")
    memory = p.add_mutually_exclusive_group()
    memory.add_argument("--gpu-memory", help="memory per GPU as torch reports it, e.g. 79.19GiB")
    memory.add_argument("--gpu", help=f"a GPU whose usable memory is known: {', '.join(KNOWN_GPUS)}")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    p.add_argument("--max-model-len", type=int, help="default: the model's own")
    p.add_argument("--max-num-seqs", type=int)
    p.add_argument("--max-num-batched-tokens", type=int, help="what a sliding window keeps in flight depends on it")
    p.add_argument("--gpu-memory-utilization", type=float)
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--kv-cache-memory-bytes", help="a fixed KV budget per GPU (overrides the utilization), e.g. 8GiB")
    p.add_argument("--block-size", type=int, help="default: vLLM's choice for the device and model")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu: their block sizes and batches differ")
    p.add_argument(
        "--cpu-flags",
        default="",
        help="with --device cpu: the serving machine's CPU flags as /proc/cpuinfo lists them "
        "(vLLM's kernels differ with avx512_bf16 and amx_tile); default: none",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    return p


def main(argv: list[str]) -> int:
    try:
        args = parser().parse_args(argv)
        kv_bytes = (
            None
            if args.kv_cache_memory_bytes is None
            else parse_size(args.kv_cache_memory_bytes, "--kv-cache-memory-bytes")
        )
        request = Request(
            args.model_dir,
            args.gpu_memory,
            args.gpu,
            args.tensor_parallel_size,
            args.pipeline_parallel_size,
            args.max_model_len,
            args.max_num_seqs,
            args.gpu_memory_utilization,
            args.kv_cache_dtype,
            kv_bytes,
            args.block_size,
            args.max_num_batched_tokens,
            args.device,
            frozenset(args.cpu_flags.replace(",", " ").split()),
        )
        shape = model.load(args.model_dir)  # a missing folder is said before a missing flag
        result = planner.plan(request, shape)
    except PlanError as error:
        print(f"vllm-advisor: {error}", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write(render.as_json(result) if args.format == "json" else render.text(result))
    return EXIT_OK
