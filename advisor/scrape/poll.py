"""`follow --metrics-url URL --interval 15s`: poll a server's /metrics beside the log and report what changed.

Counters are compared between polls: a finding when preemptions start (M101 over the interval), a
recovery when a poll counts none again. The other metric rules are judged on each poll and reported
once, as the log's findings are; a state read off a gauge (a full cache, a queue) recovers when it clears.
"""

from __future__ import annotations

import queue
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import replace

from advisor.report.contract import StreamFinding
from advisor.scrape.fetch import MetricsError, read, shown
from advisor.scrape.figures import figures
from advisor.scrape.rules import judge
from advisor.scrape.snapshot import Snapshot, parse

# Findings of a state that can end between polls.
CLEARING = {"M101", "M102", "M103"}
UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "": 1}


def interval_seconds(text: str) -> float:
    """'15s', '500ms', '2m', '1d' or a number of seconds; ValueError otherwise (argparse's type)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|)\s*", text)
    if not match or float(match[1]) <= 0:
        raise ValueError(text)
    return float(match[1]) * UNITS[match[2]]


class Comparison:
    """What each poll adds to the stream, from the poll before it."""

    def __init__(self, source: str):
        self.source = source
        self.previous: Snapshot | None = None
        self.active: dict[str, StreamFinding] = {}  # code -> the finding reported and not recovered
        self.reported: set[str] = set()

    def take(self, current: Snapshot, run: int) -> list[StreamFinding]:
        previous, self.previous = self.previous, current
        context = figures(current, previous=previous)
        if previous is None:  # the counter so far is history: only what the next polls add is news
            context.pop("preemptions", None)
        fired = {rule.code: found for rule, found in judge(context, "replica")}
        out = []
        for code, found in fired.items():
            if code not in self.reported or (code in CLEARING and code not in self.active):
                item = StreamFinding(self.source, run, found)
                out.append(item)
                self.active[code] = item
                self.reported.add(code)
        for code in [c for c in self.active if c in CLEARING and c not in fired]:
            reported = self.active.pop(code).finding
            since = (
                f" ({context['preemptions']:g} preemptions since the last poll)"
                if code == "M101" and "preemptions" in context
                else ""
            )
            message = (
                f"Cleared: the poll at {current.read_at:%H:%M:%S} no longer shows the {reported.name} "
                f"reported before{since}."
            )
            cleared = replace(reported, severity="info", remediations=[], message=message)
            out.append(StreamFinding(self.source, run, cleared, "recovery"))
        return out


class Poller:
    """A daemon thread polling one URL; its stream findings wait in a queue for the follow loop to write."""

    def __init__(self, url: str, interval: float, run: Callable[[], int]):
        self.url, self.interval, self.run = url, interval, run
        self.comparison = Comparison(shown(url))
        self.found: queue.Queue[StreamFinding] = queue.Queue()
        self.stopped = threading.Event()
        self.failing = False
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> Poller:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()

    def drain(self) -> list[StreamFinding]:
        out = []
        while not self.found.empty():
            out.append(self.found.get_nowait())
        return out

    def _loop(self) -> None:
        while not self.stopped.is_set():
            self.poll()
            self.stopped.wait(self.interval)

    def poll(self) -> None:
        try:
            snapshot = parse(read(self.url))
        except MetricsError as error:
            if not self.failing:  # said once when it starts failing, not at every poll
                print(f"vllm-advisor: {error}; following the log without metrics until it answers", file=sys.stderr)
            self.failing = True
            return
        if self.failing:
            print(f"vllm-advisor: {shown(self.url)}: answering again", file=sys.stderr)
            self.failing = False
        for item in self.comparison.take(snapshot, self.run()):
            self.found.put(item)
