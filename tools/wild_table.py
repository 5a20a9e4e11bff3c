"""Write docs/accuracy.md's table of what the wild corpus covers, from its labels: `python tools/wild_table.py`."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from rule_table import replaced_table

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "accuracy.md"
WILD = ROOT / "fixtures" / "wild"
HEADER = "| dimension | value | cases |"
# V1 (0.8 on) brackets its source location, "[core.py:52]"; V0 wrote "llm_engine.py:123]".
V1_ENVELOPE = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d [\d:.]+ \[[\w.\-/]+\.py:\d+\]")
V0_ENVELOPE = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d [\d:.]+ [\w.\-]+\.py:\d+\]")
# A healthy log is a trap when its notes name what makes it look like a failure.
TRAP_WORDS = re.compile(r"trap|warning|error|title|traceback", re.IGNORECASE)


def cases() -> list[dict]:
    return [json.loads(line) for line in (WILD / "cases.jsonl").read_text().splitlines() if line.strip()]


def family(case: dict) -> str:
    text = (WILD / Path(case["file"]).name).read_text(errors="replace")
    if V1_ENVELOPE.search(text):
        return "V1 era (0.8 on: a bracketed [file:line] envelope)"
    if V0_ENVELOPE.search(text):
        return "V0 era (0.1 – 0.7: file:line] without the bracket)"
    return "no vLLM envelope in the excerpt (tracebacks, access lines, wrappers' own lines)"


def table() -> str:
    labelled = cases()
    counts = [
        ("version family", Counter(family(c) for c in labelled)),
        ("wrapper", Counter(c["wrapper"] for c in labelled)),
        ("phase", Counter(c["phase"] for c in labelled)),
        ("failure", Counter(c["failure"] for c in labelled)),
    ]
    rows = [HEADER, "| --- | --- | ---: |"]
    for dimension, counter in counts:
        rows += [
            f"| {dimension} | {value} | {n} |" for value, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
    traps = sum(c["phase"] == "healthy" and bool(TRAP_WORDS.search(c["notes"] or "")) for c in labelled)
    trap_note = "(notes name the trap, a warning, an error or the title)"
    rows.append(f"| healthy with scary warnings or a failing title | {trap_note} | {traps} |")
    return "\n".join(rows) + "\n"


def with_table(readme: str) -> str:
    """The page with its wild corpus table written anew."""
    return replaced_table(readme, HEADER, table())


if __name__ == "__main__":
    PAGE.write_text(with_table(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
