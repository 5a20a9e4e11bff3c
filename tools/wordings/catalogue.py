"""The catalogue: the topical templates of all releases, their release range, family and verdict (curation.py);
and the coverage page's table (docs/coverage.md) made from it."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from sources import version_key

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CATALOGUE = ROOT / "fixtures" / "wordings" / "catalogue.json"

# The advisor's subjects: memory, the KV cache, lengths, parallelism, quantization, the engine's life.
TOPICS = re.compile(
    "|".join(
        [
            r"memory",
            r"\bkv[ _-]?cache",
            r"\bblocks?\b",
            r"preempt",
            r"\boom\b",
            r"gpu_memory_utilization",
            r"max_model_len",
            r"max[ _]seq[ _]len",
            r"model length",
            r"context length",
            r"tensor[ _]parallel",
            r"pipeline[ _]parallel",
            r"attention heads",
            r"quantiz",
            r"kv_cache_dtype",
            r"\bfp8",
            r"engine ?core",
            r"engine core",
            r"enginedead",
            r"engine process",
            r"swap[ _]space",
            r"throughput",
            r"model loading took",
            r"concurrency",
            r"cuda ?graph",
            r"graph capturing",
            r"address already in use",
            r"\bport\b",
            r"\bGi?B\b",
            # the lines that tell the launch flags, the version and readiness
            r"with config",
            r"non-default args",
            r"^args: ",
            r"server version",
            r"init engine",
            r"max model len",
            r"auto-fit",
        ]
    ),
    re.IGNORECASE,
)


def topical(template: str) -> bool:
    return bool(TOPICS.search(template))


def merge(per_release: dict[str, list[dict]]) -> list[dict]:
    """One entry per (template, call): the first and last release carrying it, and the file in the last."""
    entries: dict[tuple[str, str], dict] = {}
    for version in sorted(per_release, key=version_key):
        for found in per_release[version]:
            if not topical(found["template"]):
                continue
            key = (found["template"], found["call"])
            entry = entries.setdefault(
                key,
                {
                    "template": found["template"],
                    "style": found["style"],
                    "call": found["call"],
                    "first": version,
                    "releases": 0,
                },
            )
            if entry.get("last") != version:
                entry["releases"] += 1
            entry.update(file=found["file"], last=version)
    return sorted(entries.values(), key=lambda e: (e["file"], e["template"], e["call"]))


def read(path: Path = CATALOGUE) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def write(entries: list[dict], path: Path = CATALOGUE) -> None:
    # One entry a line: a new release's diff shows exactly which wordings came and went.
    lines = ",\n".join(json.dumps(entry, ensure_ascii=False) for entry in entries)
    path.write_text(f"[\n{lines}\n]\n", encoding="utf-8")


def span(entries: list[dict]) -> str:
    first = min((e["first"] for e in entries), key=version_key)
    last = max((e["last"] for e in entries), key=version_key)
    return first if first == last else f"{first} – {last}"


def _verdicts(entries: list[dict]) -> str:
    """'kind: N wordings (releases)' for each fact kind, and the ignored ones, in that order."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for entry in entries:
        # A wording read as several facts counts under each of their kinds.
        kinds = [entry["kind"], *(fact["kind"] for fact in entry.get("also", []))] if "kind" in entry else []
        for name in dict.fromkeys(f"`{kind}`" for kind in kinds) or ["ignored"]:
            groups[name].append(entry)
    order = sorted(groups, key=lambda name: (name == "ignored", name))
    return "; ".join(f"{name}: {len(groups[name])} ({span(groups[name])})" for name in order)


def coverage_table(catalogue: list[dict]) -> str:
    """A Markdown table, one row per family: its wordings, the releases that carry them, their verdicts."""
    families: dict[str, list[dict]] = defaultdict(list)
    for entry in catalogue:
        families[entry.get("family", "uncurated")].append(entry)
    rows = [
        "| family | wordings | releases | recognised as / ignored: wordings (releases) |",
        "| --- | ---: | --- | --- |",
    ]
    for family in sorted(families):
        entries = families[family]
        rows.append(f"| {family} | {len(entries)} | {span(entries)} | {_verdicts(entries)} |")
    recognised = sum("kind" in e for e in catalogue)
    rows.append(
        f"| **all** | {len(catalogue)} | {span(catalogue)} | "
        f"recognised: {recognised}; ignored: {len(catalogue) - recognised} |"
    )
    return "\n".join(rows)
