"""Learn a per-line prefix that no wrapper names (stern's pod and container, a viewer's line numbers).

Tools put their own text before every line of a log: `stern` the pod and container, a log viewer a
line number or a time, a paste a Markdown quote. vLLM's envelope is found after any of them
(unwrap.EMBEDDED_RECORD), but a traceback's lines, a progress bar or uvicorn's lines carry no
envelope. So the prefix is learned where a vLLM anchor shows where it ends, on the log's first
lines, as a shape (digits and runs of spaces vary), and stripped from every line that starts with it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from advisor.ingest.unwrap import EMBEDDED_RECORD, ENVELOPE_START, PROCESS_ID

# Where vLLM's own text starts after a prefix: its envelope, a traceback's header, a frame.
ANCHOR = re.compile(EMBEDDED_RECORD.pattern + r'|Traceback \(most recent call last\)|  File "[^"]+", line \d+')
# A prefix is a tool's: short, seen before an anchor, starting two lines at least and most lines of the head.
MAX_PREFIX = 160
MIN_LINES = 2
MIN_SHARE = 0.5
# Pods of one deployment each have their own prefix; more than this is not a per-line prefix.
MAX_SHAPES = 8
# The head the prefix is learned from: both paths (sources.lines and fast.scan) read the same one.
HEAD_LINES = 400
HEAD_BYTES = 256 << 10
# The tag vLLM's processes print before their lines ("(EngineCore_DP0 pid=8) ", "[rank0]: "), which
# tells their tracebacks apart: never part of a learned prefix.
PROCESS_TAG = re.compile(rf"\({PROCESS_ID}|\[rank\d+\]")
# What varies from line to line in a prefix of one shape.
VARYING = re.compile(r"\d+| +")


def learn(texts: Iterable[str]) -> re.Pattern[str] | None:
    """The prefix shapes the head's lines (unwrapped, not yet cleaned of embedded records) share, or None."""
    lines = [text for text in texts if text.strip()]
    shapes: Counter[str] = Counter()
    for text in lines:
        if ENVELOPE_START.match(text):
            continue  # vLLM's own line, or one whose wrapper was already stripped
        anchor = ANCHOR.search(text, 1)
        if anchor is None or not text[anchor.start() - 1].isspace():
            continue
        prefix = text[: anchor.start()]
        if tag := PROCESS_TAG.search(prefix):  # the process's own tag is vLLM's: it stays
            prefix = prefix[: tag.start()]
        if len(prefix) <= MAX_PREFIX and prefix[-1:].isspace() and prefix.strip() and not ANCHOR.search(prefix):
            shapes[shape(prefix)] += 1
    # A shape on one line only is that line's own text (frames a paste glued together), no tool's.
    common = [s for s, _ in shapes.most_common(MAX_SHAPES) if _starts(re.compile(s), lines) >= MIN_LINES]
    if not common:
        return None
    learned = re.compile("|".join(f"(?:{s})" for s in common))
    return learned if _starts(learned, lines) >= MIN_SHARE * len(lines) else None


def _starts(prefix: re.Pattern[str], lines: list[str]) -> int:
    return sum(bool(prefix.match(text)) for text in lines)


def shape(prefix: str) -> str:
    """A regex for prefixes like this one: its digits and runs of spaces may vary, the rest not."""
    parts, at = [], 0
    for varying in VARYING.finditer(prefix):
        if varying.end() == len(prefix) and varying[0][0] == " ":
            break  # the spaces that end it are exact: what follows may be indented (a frame)
        parts.append(re.escape(prefix[at : varying.start()]))
        parts.append(r"\d+" if varying[0][0].isdigit() else " +")
        at = varying.end()
    return "".join(parts) + re.escape(prefix[at:])
