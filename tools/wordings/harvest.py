"""Per-release message lists, cached as JSON so that a re-run only fetches releases it has not read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import sources
from functions_ast import calls
from messages_ast import VERSION, messages
from sources import fetched

CACHE = Path(__file__).resolve().parent / ".cache" / f"v{VERSION}"
# vLLM's wheels are large; two downloads at a time are what the shared machine allows.
PARALLEL = 2


def normalise(text: str) -> str:
    """One template for wordings that differ only in line breaks and indentation of the source."""
    return re.sub(r"\s+", " ", text).strip()


def read_release(version: str) -> dict:
    """One release, read once: every distinct (template, style, call, file, function, answered) it
    logs or raises, unfiltered (answered: an except block that returns makes the call), with the
    source lines of its calls, and its call graph ({function: [names it calls]}, merged over files)."""
    found: dict[tuple, dict] = {}
    graph: dict[str, set[str]] = {}
    for path, source in fetched(version):
        for text, style, call, function, lines, answered in messages(source):
            entry = {
                "template": normalise(text),
                "style": style,
                "call": call,
                "file": path,
                "function": function,
                "answered": answered,
            }
            found.setdefault(tuple(entry.values()), {**entry, "lines": []})["lines"].append(lines)
        for function, called in calls(source).items():
            graph.setdefault(function, set()).update(called)
    return {"messages": list(found.values()), "calls": {f: sorted(c) for f, c in sorted(graph.items())}}


def cached(version: str, cache: Path = CACHE) -> list[dict] | None:
    """The messages of one release, as last read."""
    path = cache / f"{version}.json"
    return json.loads(path.read_text())["messages"] if path.exists() else None


def cached_calls(version: str, cache: Path = CACHE) -> dict[str, list[str]] | None:
    """The call graph of one release, as last read."""
    path = cache / f"{version}.json"
    return json.loads(path.read_text())["calls"] if path.exists() else None


def harvest(versions: list[str], cache: Path = CACHE) -> dict[str, str]:
    """Read every release not cached yet; returns {version: why it failed} for those that failed."""
    return sources.harvest(versions, read_release, cache, PARALLEL)
