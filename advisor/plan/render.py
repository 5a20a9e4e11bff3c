"""A plan as text (each figure with its formula and inputs) or as JSON."""

from __future__ import annotations

import json

from advisor.plan.figures import Figure
from advisor.plan.planner import Plan

GIB = 1024**3


def _amount(value: int | float, unit: str) -> str:
    if unit == "bytes":
        if value >= GIB:
            return f"{value:,} B ({value / GIB:.2f} GiB)"
        return f"{value:,} B ({value / 1024**2:.2f} MiB)" if value >= 1024**2 else f"{value:,} B"
    if isinstance(value, float):
        return f"{value:.2f}x" if unit == "requests" else f"{value:,.2f} {unit}"
    return f"{value:,} {unit}"


def _figure_lines(figure: Figure[int | float]) -> list[str]:
    lines = [
        f"  {figure.name}: {_amount(figure.value, figure.unit)}"
        + (" (estimate)" if figure.source == "estimated" else ""),
        f"      = {figure.formula}",
    ]
    lines += [f"      {i.name} = {i.value} [{i.source}: {i.basis}]" for i in figure.inputs]
    return lines


def text(result: Plan) -> str:
    shape = result.shape
    kinds = ", ".join(f"{shape.layer_kinds.count(k)} {k}" for k in dict.fromkeys(shape.layer_kinds))
    lines = [
        f"plan for {shape.path} ({shape.architecture}: {len(shape.layer_kinds)} layers: {kinds})",
        f"device {result.request.device}, TP {result.settings.tensor_parallel}, "
        f"PP {result.settings.pipeline_parallel}, max model length {result.max_model_len:,}",
        "",
        "inputs:",
    ]
    lines += [f"  {i.name} = {i.value} [{i.source}: {i.basis}]" for i in result.inputs]
    lines += ["", "figures:"]
    for figure in result.figures:
        lines += _figure_lines(figure)
    longest = result.figure("longest max-model-len for one sequence").value
    concurrency = result.figure("maximum concurrency").value
    lines.append("")
    if result.fits:
        lines.append(
            f"fits: {result.max_model_len:,} tokens per request, {concurrency:.2f} requests of that length at once"
        )
    elif longest:
        lines.append(
            f"does not fit: one request of {result.max_model_len:,} tokens needs more than the budget; "
            f"the longest that fits is {longest:,}"
        )
    else:
        lines.append("does not fit: not even one token fits in the KV cache budget")
    if len(result.command) > 3:
        lines += ["", "command that fits (length first, then sequences):", f"  {result.command_line}"]
    if result.what_if:
        length = result.launch_length or result.max_model_len
        lines += ["", f"what if (one change each, at --max-model-len {length:,}):"]
        for row in result.what_if:
            if "error" in row:
                lines.append(f"  {row['change']}: {row['error']}")
            else:
                lines.append(
                    f"  {row['change']}: {row['kv_cache_tokens']:,} tokens, longest "
                    f"{row['longest_max_model_len']:,}, concurrency {row['concurrency']:.2f}x"
                )
    return "\n".join(lines) + "\n"


def as_json(result: Plan) -> str:
    shape = result.shape
    document = {
        "model": str(shape.path),
        "architecture": shape.architecture,
        "model_type": shape.model_type,
        "layer_kinds": shape.layer_kinds,
        "device": result.request.device,
        "max_model_len": result.max_model_len,
        "fits": result.fits,
        "inputs": [i.as_dict() for i in result.inputs],
        "figures": {f.name: f.as_dict() for f in result.figures},
        "command": result.command_line if len(result.command) > 3 else None,
        "what_if": result.what_if,
    }
    return json.dumps(document, indent=2) + "\n"
