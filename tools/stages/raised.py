"""Build advisor/raised.json: the exception messages vLLM raises only in one stage's functions.

    python tools/stages/raised.py

Every raise of every release (fixtures/wordings/raises.json) names the function that raises it; the
stage map (advisor/stages.json) places that function. A message's literal start, up to its first
placeholder, keeps the stage when every function raising a message with that start is in it. An
exception line quoting one says where vLLM was when it failed, even with no frame shown.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RAISES = ROOT / "fixtures" / "wordings" / "raises.json"
STAGES = ROOT / "advisor" / "stages.json"
RAISED = ROOT / "advisor" / "raised.json"
# Shorter starts ("Unsupported ", "Expected ") are shared by unrelated messages.
MIN_LITERAL = 20
# Where a template's literal start ends: a str.format field or a %-conversion.
PLACEHOLDER = re.compile(r"\{|%[-#0 +]*\d*(?:\.\d+)?[sdrifgexXc]")


def raised_in(raises: list[dict], stages: dict[str, list[str]]) -> dict[str, list[str]]:
    """{stage: sorted message starts} for the raises whose every raiser is in that one stage."""
    stage_of = {name: stage for stage, names in stages.items() for name in names}
    seen: dict[str, set[str]] = defaultdict(set)
    for entry in raises:
        literal = PLACEHOLDER.split(entry["template"], maxsplit=1)[0]
        if len(literal) >= MIN_LITERAL:
            seen[literal].add(stage_of.get(entry["function"], ""))
    by_stage: dict[str, list[str]] = {stage: [] for stage in stages}
    for literal in sorted(seen):
        if len(seen[literal]) == 1 and "" not in seen[literal]:
            by_stage[next(iter(seen[literal]))].append(literal)
    return by_stage


def main() -> int:
    by_stage = raised_in(json.loads(RAISES.read_text()), json.loads(STAGES.read_text())["stages"])
    document = {"about": "vLLM's raise messages by the stage of the functions raising them (tools/stages/raised.py)"}
    RAISED.write_text(json.dumps({**document, "stages": by_stage}, indent=1) + "\n")
    print(", ".join(f"{stage} {len(starts)}" for stage, starts in by_stage.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
