"""The verify page's table (docs/verify.md) of live scenarios (scenario -> advice -> outcome -> startup -> TTFT),
from the live tier.

`VLLM_ADVISOR_RECORD=1 pytest -m live tests/live/test_verify_scenarios.py` measures the rows into
fixtures/verify-scenarios.json and rewrites the table; `python tools/verify_table.py` rewrites it
from the recorded rows; the fast tier checks that the page shows exactly what was recorded."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from advisor.live import launch  # noqa: E402  (needs the repo on sys.path first)
from advisor.live import verify as live  # noqa: E402

RESULTS = ROOT / "fixtures/verify-scenarios.json"
PAGE = ROOT / "docs" / "verify.md"
START, END = "<!-- verify-table: start (tools/verify_table.py) -->", "<!-- verify-table: end -->"


def row(name: str, report, check: live.Verification) -> dict:
    """One scenario's line: what the log said, what changed, and what the relaunch measured."""
    after, before = check.after, check.before
    original = shlex.split(report.command.original) if report.command.original else []
    argv = shlex.split(after.command)
    changed = launch.changed_flags(original, argv)
    return {
        "scenario": name,
        "verdict": f"{report.verdict.phase} {report.verdict.failure}"
        + (f" ({report.verdict.rule})" if report.verdict.rule else ""),
        "advice": " ".join(f"{flag} {launch.flag_value(argv, flag)}" for flag in changed) or "none (kept as is)",
        "outcome": after.outcome,
        "startup_s": after.startup_seconds,
        "ttft_p50_before_s": before.ttft_p50_s if before else None,
        "ttft_p50_after_s": after.ttft_p50_s,
        "preemptions_before": before.preemptions if before else None,
        "preemptions_after": after.preemptions,
        "notes": [note for note in check.notes if not note.startswith("model served from")],
    }


def _cell(value, unit: str = "") -> str:
    return "-" if value is None else f"{value:g}{unit}"


def render(rows: list[dict]) -> str:
    lines = [
        "| scenario | first verdict | advice | outcome | startup | TTFT p50 before -> after | preemptions |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        before = "did not start" if r["verdict"].startswith("startup") else _cell(r["ttft_p50_before_s"], " s")
        lines.append(
            f"| {r['scenario']} | {r['verdict']} | `{r['advice']}` | {r['outcome']} | "
            f"{_cell(r['startup_s'], ' s')} | {before} -> {_cell(r['ttft_p50_after_s'], ' s')} | "
            f"{_cell(r['preemptions_before'])} -> {_cell(r['preemptions_after'])} |"
        )
    notes = [f"- {r['scenario']}: {note}" for r in rows for note in r["notes"]]
    return "\n".join(lines + (["", *notes] if notes else []))


def block(rows: list[dict]) -> str:
    return f"{START}\n{render(rows)}\n{END}"


def shown_in_page(text: str) -> str:
    return text[text.index(START) : text.index(END) + len(END)]


def write_page(rows: list[dict]) -> None:
    text = PAGE.read_text(encoding="utf-8")
    PAGE.write_text(text.replace(shown_in_page(text), block(rows)), encoding="utf-8")


if __name__ == "__main__":
    write_page(json.loads(RESULTS.read_text()))
