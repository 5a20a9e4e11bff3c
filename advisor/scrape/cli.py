"""`vllm-advisor --metrics SOURCE [LOG ...]`: read each replica's /metrics, judge them alone or with each log."""

from __future__ import annotations

import sys
from collections.abc import Callable

from advisor.pipeline import Analysis
from advisor.report.contract import MetricsMissing, Report
from advisor.scrape.fetch import MetricsError, read
from advisor.scrape.join import join
from advisor.scrape.snapshot import Snapshot, parse


def read_all(sources: list[str]) -> tuple[list[Snapshot], list[MetricsMissing]]:
    """Every source that reads and parses; each one that does not is one line on stderr and a `missing` entry."""
    snapshots, missing = [], []
    for source in sources:
        try:
            snapshots.append(parse(read(source)))
        except MetricsError as error:
            print(f"vllm-advisor: {error}", file=sys.stderr)
            missing.append(MetricsMissing(source=error.source, error=error.reason))
    return snapshots, missing


def reports(
    files: list[str],
    sources: list[str],
    user_command: str | None,
    analysis_of_file: Callable[[str, str | None], Analysis],
) -> list[Report] | None:
    """The joined reports; None when metrics alone were asked for and none could be read (exit 2)."""
    snapshots, missing = read_all(sources)
    if not files and not snapshots:
        return None
    out: list[Report] = []
    if not files:
        out.append(join(None, None, snapshots, missing, user_command))
    for path in files:
        analysis = analysis_of_file(path, user_command)
        out.append(join(analysis.diagnosis(), analysis.report(), snapshots, missing, user_command))
    return out
