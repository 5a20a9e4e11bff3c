"""Bounds on what one hostile input can make the analysis hold: a traceback keeps its outer and inner frames."""
from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Iterator

from .facts import Fact

# A real traceback has tens of frames; a runaway recursion prints thousands, a crafted log millions.
# The outermost frames say where it began, the innermost say which stage failed (timeline.py).
OUTER_FRAMES = 200
INNER_FRAMES = 200


def bounded_tracebacks(facts: Iterable[Fact]) -> Iterator[Fact]:
    """The facts in order, with the middle of each over-long traceback (per process) left out."""
    counted: dict[str | None, int] = {}
    inner: dict[str | None, deque[Fact]] = {}
    for fact in facts:
        if fact.kind == "frame":
            counted[fact.process] = counted.get(fact.process, 0) + 1
            if counted[fact.process] > OUTER_FRAMES:
                # Held back until something else is yielded; a full deque forgets its oldest frame.
                inner.setdefault(fact.process, deque(maxlen=INNER_FRAMES)).append(fact)
                continue
        else:
            counted.pop(fact.process, None)
        yield from _flush(inner)
        yield fact
    yield from _flush(inner)


def _flush(inner: dict[str | None, deque[Fact]]) -> Iterator[Fact]:
    """Held-back frames, merged back into line order, before anything later is yielded."""
    if inner:
        yield from heapq.merge(*inner.values(), key=lambda fact: fact.line)
        inner.clear()
