"""Bounds on what one hostile input can make the analysis hold: a traceback keeps its outer and inner frames."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Iterator

from advisor.parse.facts import Fact

# A real traceback has tens of frames; a runaway recursion prints thousands, a crafted log millions.
# The outermost frames say where it began, the innermost say which stage failed (timeline/frames.py).
OUTER_FRAMES = 200
INNER_FRAMES = 200


class TracebackBound:
    """Leaves out the middle of each over-long traceback (per process), one fact at a time."""

    def __init__(self) -> None:
        self.counted: dict[str | None, int] = {}
        self.inner: dict[str | None, deque[Fact]] = {}

    def add(self, fact: Fact) -> Iterator[Fact]:
        """The facts to keep now: this one, or nothing while inner frames are held back."""
        if fact.kind == "frame":
            self.counted[fact.process] = self.counted.get(fact.process, 0) + 1
            if self.counted[fact.process] > OUTER_FRAMES:
                # Held back until something else comes; a full deque forgets its oldest frame.
                self.inner.setdefault(fact.process, deque(maxlen=INNER_FRAMES)).append(fact)
                return
        else:
            self.counted.pop(fact.process, None)
        yield from _flush(self.inner)
        yield fact

    def extend(self, kept: list[Fact], facts: Iterable[Fact]) -> None:
        """Append to `kept` what add() keeps of each fact; a fact outside any traceback, while
        none is held back, goes straight through (nearly every fact of a long log)."""
        for fact in facts:
            if self.inner or fact.kind == "frame":
                kept.extend(self.add(fact))
            else:
                self.counted.pop(fact.process, None)
                kept.append(fact)

    def finish(self) -> Iterator[Fact]:
        yield from _flush(self.inner)


def bounded_tracebacks(facts: Iterable[Fact]) -> Iterator[Fact]:
    """The facts in order, with the middle of each over-long traceback (per process) left out."""
    bound = TracebackBound()
    for fact in facts:
        yield from bound.add(fact)
    yield from bound.finish()


def _flush(inner: dict[str | None, deque[Fact]]) -> Iterator[Fact]:
    """Held-back frames, merged back into line order, before anything later is yielded."""
    if inner:
        yield from heapq.merge(*inner.values(), key=lambda fact: fact.line)
        inner.clear()
