"""`vllm-advisor --metrics SOURCE | --prometheus URL [LOG ...]`: read each replica's metrics, judge them alone
or with each log."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from advisor.pipeline import Analysis
from advisor.report.contract import MetricsMissing, Report
from advisor.scrape.fetch import MetricsError, read
from advisor.scrape.join import join
from advisor.scrape.poll import interval_seconds
from advisor.scrape.prometheus import read_window
from advisor.scrape.snapshot import Snapshot, parse
from advisor.usage import InputError


@dataclass(frozen=True)
class Window:
    """What --prometheus asks: the server, the last `seconds` before now, and the series' label matchers."""

    url: str
    seconds: float
    match: str | None


def prometheus_window(url: str, since: str, match: str | None) -> Window:
    try:
        return Window(url, interval_seconds(since), match)
    except ValueError:
        raise InputError(f"--since {since!r}: not a duration (30m, 1h, 1d)") from None


def read_all(sources: list[str], window: Window | None) -> tuple[list[Snapshot], list[MetricsMissing]]:
    """Every source that reads and parses; each one that does not is one line on stderr and a `missing` entry."""
    snapshots, missing = [], []
    readers = [partial(_dump, source) for source in sources]
    if window is not None:
        readers.append(partial(read_window, window.url, window.seconds, window.match))
    for reader in readers:
        try:
            snapshots += reader()
        except MetricsError as error:
            print(f"vllm-advisor: {error}", file=sys.stderr)
            missing.append(MetricsMissing(source=error.source, error=error.reason))
    return snapshots, missing


def _dump(source: str) -> list[Snapshot]:
    return [parse(read(source))]


def reports(
    files: list[str],
    sources: list[str],
    window: Window | None,
    user_command: str | None,
    analysis_of_file: Callable[[str, str | None], Analysis],
) -> list[Report] | None:
    """The joined reports; None when metrics alone were asked for and none could be read (exit 2)."""
    snapshots, missing = read_all(sources, window)
    if not files and not snapshots:
        return None
    out: list[Report] = []
    if not files:
        out.append(join(None, None, snapshots, missing, user_command))
    for path in files:
        analysis = analysis_of_file(path, user_command)
        out.append(join(analysis.diagnosis(), analysis.report(), snapshots, missing, user_command))
    return out
