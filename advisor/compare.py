"""`vllm-advisor compare A.log B.log ...`: one row per run (its verdict, its launch flags, its KV and load
figures), what each run changed from the one before and what that did; a round that changed more than
one knob is flagged, since which change did what cannot then be told."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from advisor.command import flag_name
from advisor.pipeline import Analysis
from advisor.report.contract import Report
from advisor.scrape.fetch import read
from advisor.scrape.figures import figures
from advisor.scrape.join import log_values
from advisor.scrape.snapshot import parse

# Launch arguments that say where the server listens, not how it is sized: never a knob.
NOT_KNOBS = {"host", "port", "api_key", "served_model_name", "uvicorn_log_level", "disable_log_requests"}
# The figures of a row, in the order shown: name, column title.
COLUMNS = (
    ("max_model_len", "max-model-len"),
    ("max_num_seqs", "max-num-seqs"),
    ("gpu_memory_utilization", "utilization"),
    ("kv_cache_tokens", "KV tokens"),
    ("max_concurrency", "max concurrency"),
    ("preemptions", "preemptions"),
    ("generation_tok_s", "gen tok/s"),
    ("ttft_p50_s", "TTFT p50 s"),
)


@dataclass
class Row:
    source: str
    verdict: str  # phase/failure
    flags: dict[str, Any]  # the launch arguments the log shows (vLLM's names)
    figures: dict[str, float] = field(default_factory=dict)
    changed: dict[str, list[Any]] = field(default_factory=dict)  # flag -> [before, after], from the row before
    effect: str = ""  # what the change did, in words


def row(report: Report, flags: dict[str, Any], metrics: dict[str, Any] | None) -> Row:
    """A run's row from its report, its launch arguments and, when given, its /metrics figures."""
    facts, seen = report.facts, log_values(report, None)
    values = {
        "max_model_len": facts.get("max_seq_len", flags.get("max_model_len")),
        "max_num_seqs": flags.get("max_num_seqs"),
        "gpu_memory_utilization": facts.get("gpu_memory_utilization", flags.get("gpu_memory_utilization")),
        "kv_cache_tokens": facts.get("kv_cache_tokens"),
        "max_concurrency": facts.get("max_concurrency"),
        "preemptions": _preemptions(report),
        "generation_tok_s": seen.get("log_generation_tok_s"),
    }
    if metrics:  # the server's own counters say more than its 10-second stats lines
        values.update({k: metrics[k] for k in ("preemptions", "ttft_p50_s") if k in metrics})
    shown = {k: v for k, v in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    verdict = f"{report.verdict.phase}/{report.verdict.failure}"
    return Row(report.source, verdict, {k: v for k, v in flags.items() if k not in NOT_KNOBS}, shown)


def _preemptions(report: Report) -> float | None:
    counted = [e.values["preemptions"] for e in report.events if "preemptions" in e.values]
    if counted:
        return max(counted)
    logged = sum(1 for e in report.events if e.kind == "preemption")
    return logged or (0 if any(e.kind == "stats" for e in report.events) else None)


def compared(rows: list[Row]) -> list[Row]:
    """Each row with what changed from the row before and, in words, what it did."""
    for before, after in itertools.pairwise(rows):
        names = sorted(set(before.flags) | set(after.flags))
        after.changed = {
            n: [before.flags.get(n), after.flags.get(n)] for n in names if before.flags.get(n) != after.flags.get(n)
        }
        after.effect = _effect(before, after)
    return rows


def _effect(before: Row, after: Row) -> str:
    knobs = ", ".join(f"{flag_name(n)} {_given(a)} -> {_given(b)}" for n, (a, b) in after.changed.items()) or "no flag"
    moved = [
        f"{title} {_number(before.figures[n])} -> {_number(after.figures[n])}"
        for n, title in COLUMNS
        if n in before.figures and n in after.figures and before.figures[n] != after.figures[n]
    ]
    verdict = (
        f"verdict {before.verdict} -> {after.verdict}"
        if before.verdict != after.verdict
        else f"verdict still {after.verdict}"
    )
    said = f"changed {knobs}: {'; '.join([verdict, *moved])}."
    if len(after.changed) > 1:
        said += (
            f" More than one knob changed ({len(after.changed)}): which did what cannot be told; change one at a time."
        )
    return said


def compare(runs: list[Analysis], metrics: list[str]) -> list[Row]:
    """The rows of these logs' reports, each with its /metrics source when `metrics` pairs one with every
    log (MetricsError for a source that cannot be read)."""
    dumps: list[dict[str, Any] | None] = [figures(parse(read(source))) for source in metrics]
    rows = []
    for analysis, dump in zip(runs, dumps or [None] * len(runs), strict=True):
        last, _ = analysis.diagnosis().last
        rows.append(row(analysis.report(), last.launch_args() if last is not None else {}, dump))
    return compared(rows)


def render(rows: list[Row], form: str) -> str:
    if form == "json":
        return json.dumps({"schema": "vllm-advisor.compare/1", "runs": [asdict(r) for r in rows]}, indent=2) + "\n"
    columns = [n for n, _ in COLUMNS if any(n in r.figures for r in rows)]
    titles = ["run", "verdict", "changed", *(dict(COLUMNS)[n] for n in columns)]
    table = [
        [r.source, r.verdict, " ".join(f"{flag_name(n)} {_given(v[1])}" for n, v in r.changed.items()) or "-"]
        + [_number(r.figures[n]) if n in r.figures else "-" for n in columns]
        for r in rows
    ]
    effects = [f"{r.source} vs {rows[i].source}: {r.effect}" for i, r in enumerate(rows[1:])]
    if form == "markdown":
        lines = ["| " + " | ".join(titles) + " |", "|" + " --- |" * len(titles)]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |" for cells in table]
        return "\n".join([*lines, "", *(f"- {e}" for e in effects)]) + "\n"
    widths = [max(len(str(cells[i])) for cells in [titles, *table]) for i in range(len(titles))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() for cells in [titles, *table]
    ]
    return "\n".join([*lines, "", *effects]) + "\n"


def _given(value: Any) -> str:
    """A flag's value as it would be typed; (unset) when the run did not give the flag."""
    return "(unset)" if value is None else str(value)


def _number(value: Any) -> str:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return f"{int(value):,}"
    return f"{value:,}" if isinstance(value, int) else str(value)
