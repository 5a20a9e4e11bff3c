"""Build advisor/scrape/names.json: the Prometheus metric names each vLLM release defines, read from its source.

    python tools/metric_names/extract.py            fetch the releases not cached yet, rebuild names.json
    python tools/metric_names/extract.py --offline  rebuild from the cache only

Each release's wheel (or sdist) is fetched and read in memory as the wording catalogue does
(tools/wordings/sources.py: nothing is unpacked or run); every Counter/Gauge/Histogram/Summary/Info
constructor whose name is a literal "vllm:..." is kept with its type. tools/metric_names/.cache keeps
each release's names, so a re-run fetches only new releases.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "wordings"))

import sources  # noqa: E402
from sources import fetched, releases, version_key  # noqa: E402

CACHE = HERE / ".cache"
OUTPUT = HERE.parent.parent / "advisor" / "scrape" / "names.json"
TYPES = ("counter", "gauge", "histogram", "summary", "info")
PARALLEL = 4


def metric_names(source: bytes) -> dict[str, str]:
    """{"vllm:...": type} of the metric constructors in one Python file."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    # `name = "vllm:cache_config_info"` then `Gauge(name=name, ...)`: a literal assigned in the file counts.
    literals = {
        target.id: node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = ast.unparse(node.func).lower().rsplit(".", 1)[-1]
        kind = next((t for t in TYPES if t in callee), None)
        name = next((k.value for k in node.keywords if k.arg == "name"), node.args[0] if node.args else None)
        text = literals.get(name.id) if isinstance(name, ast.Name) else getattr(name, "value", None)
        if kind and isinstance(text, str) and text.startswith("vllm:"):
            found[text] = kind
    return found


def read_release(version: str) -> dict[str, str]:
    names: dict[str, str] = {}
    for _path, source in fetched(version):
        names.update(metric_names(source))
    return dict(sorted(names.items()))


def harvest(versions: list[str]) -> dict[str, str]:
    """Read every release not cached yet; {version: why} for those that failed."""
    return sources.harvest(versions, read_release, CACHE, PARALLEL)


def build(per_release: dict[str, dict[str, str]]) -> dict:
    """One entry per name: its type and the spans of consecutive releases that define it."""
    ordered = sorted(per_release, key=version_key)
    entries: dict[str, dict] = {}
    for index, version in enumerate(ordered):
        for name, kind in per_release[version].items():
            # prometheus_client exposes a counter's family without "_total" (its sample has it),
            # whichever way the source spelled it: keep the family names a parsed dump has.
            name = name.removesuffix("_total") if kind == "counter" else name
            entry = entries.setdefault(name, {"type": kind, "spans": []})
            spans = entry["spans"]
            if spans and spans[-1][1] == version:  # spelt both with and without _total in one release
                continue
            if spans and spans[-1][1] == ordered[index - 1]:
                spans[-1][1] = version
            else:
                spans.append([version, version])
    return {"releases": ordered, "metrics": dict(sorted(entries.items()))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offline", action="store_true", help="use cached releases only")
    parser.add_argument("--first", default="0.1.0")
    parser.add_argument("--last", default="0.33.0")
    args = parser.parse_args(argv)
    failed: dict[str, str] = {}
    if args.offline:
        versions = sorted((p.stem for p in CACHE.glob("*.json")), key=version_key)
    else:
        versions = releases(args.first, args.last)
        failed = harvest(versions)
    per_release = {v: json.loads((CACHE / f"{v}.json").read_text()) for v in versions if (CACHE / f"{v}.json").exists()}
    table = build(per_release)
    OUTPUT.write_text(json.dumps(table, indent=1) + "\n")
    print(f"{len(per_release)} releases, {len(table['metrics'])} metric names -> {OUTPUT}")
    for version, why in failed.items():
        print(f"failed: vllm {version}: {why}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
