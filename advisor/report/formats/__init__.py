"""Report formatters behind one small interface: a name and a function from reports to text."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from advisor.report.contract import Report

# Each name is its module's; a module is imported when first used: the text formatter's rich
# takes longer to import than a JSON report of a small log takes to write.
FORMAT_MODULES = {"json": "json_format", "markdown": "markdown", "ndjson": "ndjson", "sarif": "sarif", "text": "text"}


def formatter(name: str) -> Callable[[list[Report]], str]:
    render: Callable[[list[Report]], str] = import_module(f".{FORMAT_MODULES[name]}", __name__).render
    return render


FORMATS = tuple(FORMAT_MODULES)


def render(name: str, reports: list[Report]) -> str:
    return formatter(name)(reports)
