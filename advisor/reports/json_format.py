"""JSON: the report contract, one object per input (an array when several files are given)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import TextIO

from ..report import Report


def render(reports: list[Report]) -> str:
    return "".join(pieces(reports))


def write(reports: list[Report], stream: TextIO) -> None:
    """Write piece by piece: the text of a report with a million events never sits whole in memory."""
    for piece in pieces(reports):
        stream.write(piece)


def pieces(reports: list[Report]) -> Iterator[str]:
    if len(reports) == 1:
        yield from reports[0].json_parts()
        yield "\n"
        return
    yield "[\n"
    for index, report in enumerate(reports):
        if index:
            yield ",\n"
        yield from report.json_parts()
    yield "\n]\n"
