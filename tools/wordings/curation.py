"""The verdict on each catalogued wording: what the grammar reads of it, or else what curation.toml says."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from reading import ErasDisagree, read

CURATION = Path(__file__).resolve().parent / "curation.toml"
# The keys that curate() adds to a merged entry.
VERDICT_KEYS = ("family", "kind", "values", "also", "samples", "ignored", "conflict")


@dataclass
class Curation:
    families: dict[str, str]  # fact kind -> family
    hints: list[dict]  # sample text for wordy placeholders, by template
    rules: list[dict]  # what the grammar does not read: ignored, known as an exception, or guarded


def load(path: Path = CURATION) -> Curation:
    """The curation; a rule above the guard that names a wording (a `match`) claims it from the grammar."""
    toml = tomllib.loads(path.read_text(encoding="utf-8"))
    rules = toml["rule"]
    guard = next(index for index, rule in enumerate(rules) if "guard" in rule)
    for index, rule in enumerate(rules):
        rule["pattern"] = re.compile(rule["match"])
        rule["claims"] = index < guard and bool(rule["match"])
    for hint in toml["hint"]:
        hint["pattern"] = re.compile(hint["match"])
    return Curation(toml["families"], toml["hint"], rules)


def _fits(rule: dict, entry: dict) -> bool:
    return bool(
        rule["pattern"].search(entry["template"])
        and re.fullmatch(rule.get("call", ".*"), entry["call"])
        and re.search(rule.get("file", ""), entry["file"])
    )


def curate(entry: dict, curation: Curation) -> dict:
    """The entry with its verdict: the facts the grammar reads (and their kind's family); else the first rule
    that fits: ignored, or (a raise) known as the uncaught exception it is. A guard, or no rule, leaves it
    uncurated; so does a wording both read by the grammar and claimed by a rule (a `conflict`)."""
    hint = next((hint for hint in curation.hints if hint["pattern"].search(entry["template"])), None)
    if hint:
        entry = {**entry, "samples": hint["samples"]}
    rule = next((rule for rule in curation.rules if _fits(rule, entry)), None)
    try:
        facts, raised = read(entry)
    except ErasDisagree as why:
        return {**entry, "conflict": str(why)}
    if facts:
        first, *more = facts
        family = curation.families.get(first["kind"])
        verdict = {**({"family": family} if family else {}), **first, **({"also": more} if more else {})}
        if rule and rule["claims"]:
            verdict["conflict"] = f"read by the grammar, yet curation.toml says: {_says(rule)}"
        return {**entry, **verdict}
    if rule is None or "guard" in rule:
        return entry
    if "ignored" in rule:
        return {**entry, "family": rule["family"], "ignored": rule["ignored"]}
    if raised:
        return {**entry, "family": rule["family"], "kind": "exception"}
    return {**entry, "conflict": f"not read as an exception, yet curation.toml says: {_says(rule)}"}


def _says(rule: dict) -> str:
    return rule.get("ignored") or rule["exception"]


def curated(entry: dict) -> bool:
    return "family" in entry and ("kind" in entry or "ignored" in entry) and "conflict" not in entry


def bare(entry: dict) -> dict:
    """The merged entry, as catalogue.merge made it: without its verdict."""
    return {key: value for key, value in entry.items() if key not in VERDICT_KEYS}
