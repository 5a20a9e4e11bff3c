"""Build fixtures/wordings/catalogue.json from every vLLM release's source; print what is new or uncurated.

    python tools/wordings/extract.py            fetch the releases not cached yet, rebuild the catalogue
    python tools/wordings/extract.py --offline  rebuild from the cache only (no download)
    python tools/wordings/extract.py --verdicts the catalogue's wordings as they are, their verdicts anew
                                                (after a change to the grammar or curation.toml)
    python tools/wordings/extract.py --table    print the coverage page's table from the catalogue

Archives are read in memory and deleted at once; tools/wordings/.cache keeps each release's messages.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The grammar of this checkout (the catalogue records what it reads), and the tools' modules.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import catalogue
import curation
from harvest import CACHE, cached, harvest
from sources import releases, version_key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", action="store_true", help="print the coverage table and stop")
    parser.add_argument("--offline", action="store_true", help="use cached releases only")
    parser.add_argument("--verdicts", action="store_true", help="re-curate the catalogued wordings only")
    parser.add_argument("--first", default="0.1.0")
    parser.add_argument("--last", default="0.33.0")
    args = parser.parse_args(argv)
    before = catalogue.read()
    if args.table:
        print(catalogue.coverage_table(before))
        return 0
    failed: dict[str, str] = {}
    if args.verdicts:
        source, merged = "as catalogued", [curation.bare(entry) for entry in before]
    else:
        if args.offline:
            versions = sorted((p.stem for p in CACHE.glob("*.json")), key=version_key)
        else:
            versions = releases(args.first, args.last)
            failed = harvest(versions)
        per_release = {v: found for v in versions if (found := cached(v)) is not None}
        if not per_release:
            print(f"no release read ({CACHE} is empty): the catalogue is left as it is")
            return 1
        source, merged = f"from {len(per_release)} releases", catalogue.merge(per_release)
    today = curation.load()
    entries = [curation.curate(entry, today) for entry in merged]
    catalogue.write(entries)
    report(entries, {(e["template"], e["call"]) for e in before}, failed, source)
    return 1 if failed or not all(map(curation.curated, entries)) else 0


def report(entries: list[dict], before: set, failed: dict[str, str], source: str) -> None:
    """New wordings (not in the previous catalogue), uncurated ones, and releases that could not be read."""
    new = [e for e in entries if (e["template"], e["call"]) not in before]
    uncurated = [e for e in entries if not curation.curated(e)]
    print(
        f"{len(entries)} wordings ({source}), {sum('kind' in e for e in entries)} recognised, "
        f"{sum('ignored' in e for e in entries)} ignored, {len(uncurated)} uncurated"
    )
    for title, listed in (
        ("new since the last catalogue", new),
        ("uncurated (teach the grammar the wording, or add a rule to curation.toml)", uncurated),
    ):
        if listed:
            print(f"\n{title}:")
            for e in listed:
                print(f"  {e['first']}..{e['last']} {e['call']} {e['file']}: {e['template']}{_why(e)}")
    for version, why in failed.items():
        print(f"failed: vllm {version}: {why}")


def _why(entry: dict) -> str:
    if "conflict" in entry:
        return f"\n    conflict: {entry['conflict']}"
    if "kind" in entry and "family" not in entry:
        return f"\n    read as {entry['kind']}, a kind with no family in curation.toml's [families]"
    return ""


if __name__ == "__main__":
    sys.exit(main())
