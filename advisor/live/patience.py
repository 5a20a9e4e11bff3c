"""How long `verify` waits for readiness by default: as long as the original run took to get where it
failed, read from its records' own timestamps, twice over and a minute more.

A machine that took 26 s to reach the KV-cache check will not be ready after the fix in 30 s if it is
loaded; a fixed timeout either waits too little there or too long on a quiet machine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from advisor.ingest.sources import Line

# vLLM's record envelope: "INFO 11-29 10:33:52" (no year: a run that crosses New Year gives up).
RECORD_TIME = re.compile(r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")
DEFAULT_SECONDS = 300.0  # when the log shows no span of time
MINIMUM_SECONDS = 120.0
FACTOR, MARGIN_SECONDS = 2.0, 60.0


def readiness_timeout(lines: Iterable[Line], until_line: int | None) -> float:
    """Seconds to wait for the relaunch: from the log's first record to the one on `until_line` (its
    failure), doubled, plus a margin, at least MINIMUM_SECONDS; DEFAULT_SECONDS without such a span."""
    if until_line is None:
        return DEFAULT_SECONDS
    first = last = None
    for line in lines:
        if line.number > until_line:
            break
        if match := RECORD_TIME.search(line.text):
            month, day, hour, minute, second = map(int, match.groups())
            try:
                when = datetime(2000, month, day, hour, minute, second)  # a leap year: 02-29 exists
            except ValueError:
                continue
            first, last = first or when, when
    if first is None or last is None or last < first:
        return DEFAULT_SECONDS
    return max(MINIMUM_SECONDS, FACTOR * (last - first).total_seconds() + MARGIN_SECONDS)
