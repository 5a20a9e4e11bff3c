"""JSON: the report contract, one object per input (an array when several files are given)."""
from __future__ import annotations

from ..report import Report


def render(reports: list[Report]) -> str:
    if len(reports) == 1:
        return reports[0].to_json() + "\n"
    return "[\n" + ",\n".join(r.to_json() for r in reports) + "\n]\n"
