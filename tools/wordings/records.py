"""Build fixtures/wordings/records.json: every logger call of every vLLM release (0.1.0 - 0.33.0), with its
level, module, function and the releases that carry it, and fixtures/wordings/raises.json: every raise with a
message, with its exception class; print the coverage page's table of them.

    python tools/wordings/records.py           rebuild from the harvested releases (tools/wordings/.cache)
    python tools/wordings/records.py --table   print the coverage page's table from records.json

tests/unit/test_records_catalogue.py prints each as vLLM's logger would in its release and checks that
the advisor recognises it as a vLLM record from its envelope and source file (advisor/parse/records.py),
and each raise, as Python prints an uncaught one, as an exception of its class.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harvest import CACHE, cached
from sources import version_key

from advisor.ingest.sources import Line
from advisor.parse.grammar import parse_line
from advisor.parse.records import first_record

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "fixtures" / "wordings" / "records.json"
RAISES = ROOT / "fixtures" / "wordings" / "raises.json"
CATALOGUE = ROOT / "fixtures" / "wordings" / "catalogue.json"
# The level each logger method prints.
LEVELS = {
    "debug": "DEBUG",
    "debug_once": "DEBUG",
    "info": "INFO",
    "info_once": "INFO",
    "warning": "WARNING",
    "warning_once": "WARNING",
    "warn": "WARNING",
    "error": "ERROR",
    "error_once": "ERROR",
    "exception": "ERROR",
    "critical": "CRITICAL",
}


def build(per_release: dict[str, list[dict]]) -> list[dict]:
    """One entry per (template, call, file) of the logger calls: level, function, first and last release."""
    return _entries(per_release, lambda call: call.startswith("logger."), lambda call: {"level": LEVELS[call[7:]]})


def build_raises(per_release: dict[str, list[dict]]) -> list[dict]:
    """One entry per (template, class, file) of the raises: class, function, first and last release."""
    return _entries(per_release, lambda call: not call.startswith("logger."), lambda call: {"raises": call})


def _entries(per_release: dict[str, list[dict]], wanted, kind) -> list[dict]:
    entries: dict[tuple[str, str, str], dict] = {}
    for version in sorted(per_release, key=version_key):
        for message in per_release[version]:
            if not wanted(message["call"]):
                continue
            key = (message["template"], message["call"], message["file"])
            entry = entries.setdefault(
                key,
                {
                    "template": message["template"],
                    "style": message["style"],
                    **kind(message["call"]),
                    "file": message["file"],
                    "function": message["function"],
                    "first": version,
                },
            )
            entry["last"] = version
    return sorted(entries.values(), key=lambda e: (e["file"], e["template"], e.get("level") or e["raises"]))


# vLLM's logger format: "LEVEL MM-DD hh:mm:ss file.py:N] message" until 0.8, "[file.py:N]" from 0.8 on.
BRACKETED_SINCE = version_key("0.8.0")
PLACEHOLDER = re.compile(r"%[-#0 +]*\d*(?:\.\d+)?[sdifrxXeEgGc]|\{[^{}]*\}")


def printed(record: dict) -> list[str]:
    """The record as vLLM's logger prints it in the first and in the last release that carry it, with
    every placeholder filled."""
    message = filled(record)
    name = record["file"].rsplit("/", 1)[-1]
    eras = {version_key(record["first"]) >= BRACKETED_SINCE, version_key(record["last"]) >= BRACKETED_SINCE}
    return [
        f"{record['level']} 12-02 10:00:00 {f'[{name}:1]' if bracketed else f'{name}:1]'} {message}"
        for bracketed in eras
    ]


# What an exception line may state instead of a plain exception: the failures named by their words.
OWN_FACTS = {"engine_dead", "engine_fatal", "engine_start_failed", "cuda_oom", "kv_cache_error", "no_cache_blocks"}


def filled(template: dict) -> str:
    """A message with every placeholder filled."""
    return PLACEHOLDER.sub("1", template["template"]) if template["style"] else template["template"]


def raised(entry: dict) -> bool:
    """Whether the advisor reads the raise, as Python prints it uncaught: as an exception of its class,
    or by a fact of its own (AsyncEngineDeadError's words are engine_dead)."""
    line = f"{entry['raises']}: {filled(entry)}".splitlines()[0]
    facts = parse_line(line, 1)
    return any((f.kind == "exception" and f.text["type"] == entry["raises"]) or f.kind in OWN_FACTS for f in facts)


def recognised(record: dict) -> bool:
    """Whether the advisor knows each printed form of the record as a vLLM record of its source file."""
    found = [first_record([Line(1, text)]) for text in printed(record)]
    return all(f is not None and f.text["source"] == record["file"].rsplit("/", 1)[-1] for f in found)


def table(records: list[dict], catalogue: list[dict], raises: list[dict]) -> str:
    """The coverage page's table: logger calls by level, each recognised as a record, some by a fact of its own;
    and the raises, each read as an exception of its class."""
    by_level = Counter(r["level"] for r in records)
    known = Counter(r["level"] for r in records if recognised(r))
    facts = {(e["template"], e["file"]) for e in catalogue if "kind" in e and e["call"].startswith("logger.")}
    specific = Counter(r["level"] for r in records if (r["template"], r["file"]) in facts)
    first = min((r["first"] for r in records), key=version_key)
    last = max((r["last"] for r in records), key=version_key)
    rows = [
        f"| level | logger calls ({first} – {last}) | recognised as a vLLM record | read by a fact of its own |",
        "| --- | ---: | ---: | ---: |",
    ]
    rows.extend(
        f"| {level} | {by_level[level]} | {known[level]} | {specific[level]} |"
        for level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
        if by_level[level]
    )
    rows.append(f"| **all** | {len(records)} | {sum(known.values())} | {sum(specific.values())} |")
    facts = {
        (e["template"], e["file"])
        for e in catalogue
        if e.get("kind") not in (None, "exception") and not e["call"].startswith("logger.")
    }
    read = sum(raised(r) for r in raises)
    specific_raises = sum((r["template"], r["file"]) in facts for r in raises)
    rows.append(f"| raises (exception lines) | {len(raises)} | {read} | {specific_raises} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", action="store_true", help="print the coverage page's table and stop")
    args = parser.parse_args(argv)
    if not args.table:
        versions = sorted((p.stem for p in CACHE.glob("*.json")), key=version_key)
        per_release = {v: cached(v) or [] for v in versions}
        records, raises = build(per_release), build_raises(per_release)
        for path, entries in ((RECORDS, records), (RAISES, raises)):
            lines = ",\n".join(json.dumps(r, ensure_ascii=False) for r in entries)
            path.write_text(f"[\n{lines}\n]\n")
        print(f"{len(versions)} releases, {len(records)} logger calls, {len(raises)} raises", file=sys.stderr)
    catalogue = json.loads(CATALOGUE.read_text())
    print(table(json.loads(RECORDS.read_text()), catalogue, json.loads(RAISES.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
