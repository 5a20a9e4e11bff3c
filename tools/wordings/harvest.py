"""Per-release message lists, cached as JSON so that a re-run only fetches releases it has not read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import sources
from messages_ast import VERSION, messages
from sources import fetched

CACHE = Path(__file__).resolve().parent / ".cache" / f"v{VERSION}"
# vLLM's wheels are large; two downloads at a time are what the shared machine allows.
PARALLEL = 2


def normalise(text: str) -> str:
    """One template for wordings that differ only in line breaks and indentation of the source."""
    return re.sub(r"\s+", " ", text).strip()


def read_release(version: str) -> list[dict]:
    """Every distinct (template, style, call, file) of one release, unfiltered."""
    found: dict[tuple, dict] = {}
    for path, source in fetched(version):
        for text, style, call in messages(source):
            entry = {"template": normalise(text), "style": style, "call": call, "file": path}
            found.setdefault(tuple(entry.values()), entry)
    return list(found.values())


def cached(version: str, cache: Path = CACHE) -> list[dict] | None:
    path = cache / f"{version}.json"
    return json.loads(path.read_text()) if path.exists() else None


def harvest(versions: list[str], cache: Path = CACHE) -> dict[str, str]:
    """Read every release not cached yet; returns {version: why it failed} for those that failed."""
    return sources.harvest(versions, read_release, cache, PARALLEL)
