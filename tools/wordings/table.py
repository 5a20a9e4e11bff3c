"""The README's coverage table: message families by release range, recognised or deliberately ignored."""
from __future__ import annotations

from collections import defaultdict

from sources import version_key


def span(entries: list[dict]) -> str:
    first = min((e["first"] for e in entries), key=version_key)
    last = max((e["last"] for e in entries), key=version_key)
    return first if first == last else f"{first} – {last}"


def _verdicts(entries: list[dict]) -> str:
    """'kind: N wordings (releases)' for each fact kind, and the ignored ones, in that order."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for entry in entries:
        groups[f"`{entry['kind']}`" if "kind" in entry else "ignored"].append(entry)
    order = sorted(groups, key=lambda name: (name == "ignored", name))
    return "; ".join(f"{name}: {len(groups[name])} ({span(groups[name])})" for name in order)


def coverage_table(catalogue: list[dict]) -> str:
    """A Markdown table, one row per family: its wordings, the releases that carry them, their verdicts."""
    families: dict[str, list[dict]] = defaultdict(list)
    for entry in catalogue:
        families[entry.get("family", "uncurated")].append(entry)
    rows = ["| family | wordings | releases | recognised as / ignored: wordings (releases) |",
            "| --- | ---: | --- | --- |"]
    for family in sorted(families):
        entries = families[family]
        rows.append(f"| {family} | {len(entries)} | {span(entries)} | {_verdicts(entries)} |")
    recognised = sum("kind" in e for e in catalogue)
    rows.append(f"| **all** | {len(catalogue)} | {span(catalogue)} | "
                f"recognised: {recognised}; ignored: {len(catalogue) - recognised} |")
    return "\n".join(rows)
