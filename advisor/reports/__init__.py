"""Report formatters behind one small interface: a name and a function from reports to text."""
from __future__ import annotations

from collections.abc import Callable

from ..report import Report
from . import json_format, markdown, ndjson, sarif, text

FORMATS: dict[str, Callable[[list[Report]], str]] = {
    "json": json_format.render,
    "markdown": markdown.render,
    "ndjson": ndjson.render,
    "sarif": sarif.render,
    "text": text.render,
}


def render(name: str, reports: list[Report]) -> str:
    return FORMATS[name](reports)
