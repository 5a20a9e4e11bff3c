"""Exact weight bytes from safetensors headers (the 8-byte length and the JSON after it, never the tensors)."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.plan.figures import PlanError

# A header bigger than this is not a safetensors header (the format caps it at 100 MB).
MAX_HEADER = 100_000_000


@dataclass(frozen=True)
class Weights:
    bytes: int
    parameters: int
    dtypes: tuple[str, ...]  # the tensors' dtypes, most bytes first
    basis: str  # which files said so


def header(path: Path) -> dict[str, Any]:
    """The JSON header of one .safetensors file."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(8)
            if len(raw) != 8:
                raise PlanError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
            (length,) = struct.unpack("<Q", raw)
            if length > MAX_HEADER:
                raise PlanError(f"{path}: not a safetensors file (header length {length})")
            text = handle.read(length)
    except OSError as error:
        raise PlanError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        parsed = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise PlanError(f"{path}: not a safetensors file (its header is not JSON)") from None
    if not isinstance(parsed, dict):
        raise PlanError(f"{path}: not a safetensors file (its header is not a JSON object)")
    return parsed


def read(model_dir: Path) -> Weights | None:
    """The weights in the folder's .safetensors files, else the total of their index; None if neither."""
    files = sorted(model_dir.glob("*.safetensors"))
    if files:
        total, parameters = 0, 0
        by_dtype: dict[str, int] = {}
        for path in files:
            for name, tensor in header(path).items():
                if name == "__metadata__":
                    continue
                try:
                    start, end = tensor["data_offsets"]
                    count = 1
                    for size in tensor["shape"]:
                        count *= size
                except (KeyError, TypeError, ValueError):
                    raise PlanError(f"{path}: tensor {name!r} has no data_offsets or shape") from None
                total += end - start
                parameters += count
                by_dtype[tensor.get("dtype", "?")] = by_dtype.get(tensor.get("dtype", "?"), 0) + end - start
        dtypes = tuple(sorted(by_dtype, key=by_dtype.__getitem__, reverse=True))
        return Weights(total, parameters, dtypes, f"{len(files)} safetensors header(s)")
    index = model_dir / "model.safetensors.index.json"
    if index.is_file():
        try:
            total = json.loads(index.read_text(encoding="utf-8"))["metadata"]["total_size"]
        except (OSError, ValueError, KeyError, TypeError):
            raise PlanError(f"{index}: no metadata.total_size") from None
        return Weights(int(total), 0, (), "model.safetensors.index.json metadata.total_size")
    return None
