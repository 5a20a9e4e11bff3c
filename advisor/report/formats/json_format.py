"""JSON: the report contract, one object per input (an array when several files are given)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Protocol, TextIO

from advisor.report.contract import Report


class WritesJson(Protocol):
    """A report, or one being made (a big log's, whose events are written before the rest is known)."""

    def write_json(self, stream: TextIO) -> None: ...


def render(reports: list[Report]) -> str:
    text = io.StringIO()
    write(reports, text)
    return text.getvalue()


def write(reports: Sequence[WritesJson], stream: TextIO) -> None:
    """Write piece by piece: the text of a report with a million events never sits whole in memory."""
    if len(reports) == 1:
        reports[0].write_json(stream)
        stream.write("\n")
        return
    stream.write("[\n")
    for index, report in enumerate(reports):
        if index:
            stream.write(",\n")
        report.write_json(stream)
    stream.write("\n]\n")
