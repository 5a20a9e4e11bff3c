"""Build fixtures/wordings/catalogue.json from every vLLM release's source; print what is new or uncurated.

    python tools/wordings/extract.py            fetch the releases not cached yet, rebuild the catalogue
    python tools/wordings/extract.py --offline  rebuild from the cache only (no download)
    python tools/wordings/extract.py --table    print the coverage page's table from the catalogue

Archives are read in memory and deleted at once; tools/wordings/.cache keeps each release's messages.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import catalogue
from harvest import CACHE, cached, harvest
from sources import releases, version_key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", action="store_true", help="print the coverage table and stop")
    parser.add_argument("--offline", action="store_true", help="use cached releases only")
    parser.add_argument("--first", default="0.1.0")
    parser.add_argument("--last", default="0.33.0")
    args = parser.parse_args(argv)
    if args.table:
        print(catalogue.coverage_table(catalogue.read()))
        return 0
    if args.offline:
        versions = sorted((p.stem for p in CACHE.glob("*.json")), key=version_key)
        failed: dict[str, str] = {}
    else:
        versions = releases(args.first, args.last)
        failed = harvest(versions)
    per_release = {v: found for v in versions if (found := cached(v)) is not None}
    before = {(e["template"], e["call"]) for e in catalogue.read()}
    entries = catalogue.build(per_release, catalogue.load_rules())
    catalogue.write(entries)
    report(entries, before, failed, len(per_release))
    return 1 if failed or not all(map(catalogue.curated, entries)) else 0


def report(entries: list[dict], before: set, failed: dict[str, str], read: int) -> None:
    """New wordings (not in the previous catalogue), uncurated ones, and releases that could not be read."""
    new = [e for e in entries if (e["template"], e["call"]) not in before]
    uncurated = [e for e in entries if not catalogue.curated(e)]
    print(
        f"{read} releases, {len(entries)} wordings, {sum('kind' in e for e in entries)} recognised, "
        f"{sum('ignored' in e for e in entries)} ignored, {len(uncurated)} uncurated"
    )
    for title, listed in (
        ("new since the last catalogue", new),
        ("uncurated (add a rule to curation.toml)", uncurated),
    ):
        if listed:
            print(f"\n{title}:")
            for e in listed:
                print(f"  {e['first']}..{e['last']} {e['call']} {e['file']}: {e['template']}")
    for version, why in failed.items():
        print(f"failed: vllm {version}: {why}")


if __name__ == "__main__":
    sys.exit(main())
