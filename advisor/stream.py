"""Streaming engine: the batch grammar, timeline and rules fed one line at a time, emitting findings once per run."""
from __future__ import annotations

import json
from dataclasses import dataclass

from .facts import Fact
from .grammar import parse_line
from .report import Finding, Verdict, finding, verdict
from .rules import Match, load_rules, match_run, without_superseded
from .sources import Line, lines
from .timeline import Run, place, starts_new_run

STREAM_SCHEMA = "vllm-advisor.finding/1"
# Memory stays bounded on a server that runs for months: of each kind of fact the current run keeps
# the first ones (where startup facts, the first exception and the first stats live, as batch reads them)
# and the latest ones (the window the next stats line and traceback are judged in).
KEEP_FIRST = 16
KEEP_LAST = 16
# A stub placed at the end of a run cut inside a traceback: only judged when the run ends.
END_OF_RUN_KINDS = {"incomplete_traceback"}


@dataclass(frozen=True)
class StreamFinding:
    """A finding of one run of one source, or the retraction of one that a later finding superseded."""

    source: str
    run: int
    finding: Finding
    retracted: bool = False

    def to_dict(self) -> dict:
        return {"schema": STREAM_SCHEMA, "event": "retraction" if self.retracted else "finding",
                "source": self.source, "run": self.run, **self.finding.model_dump()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def summary(self) -> str:
        f = self.finding
        word = "RETRACTED " if self.retracted else ""
        return f"{word}{f.severity.upper()} {f.rule} {f.name} [{self.source} run {self.run} line {f.line}] {f.message}"


class StreamEngine:
    """Feed lines, collect findings as soon as they are decidable; `finish()` judges the last run whole."""

    def __init__(self, source: str = "<stream>"):
        self.source = source
        self.lines_read = 0
        self._last_number = 0
        self.verdicts: dict[int, Verdict] = {}
        self._rules = load_rules()
        self._run = Run(0)
        self._active: dict[str, Match] = {}  # rule code -> the match reported and not retracted
        self._seen: set[str] = set()  # rule codes reported in the current run, retracted or not
        self._final: list[StreamFinding] = []  # the settled findings of runs already ended

    def feed_raw(self, raw: bytes | str) -> list[StreamFinding]:
        """One physical line as read (wrappers, colour codes, CR-redrawn segments), numbered in arrival order."""
        data = raw.encode("utf-8", errors="surrogateescape") if isinstance(raw, str) else raw
        number = self._last_number + 1
        out = [f for segment in lines([data.rstrip(b"\n")]) for f in self.feed(Line(number, segment.text))]
        if self._last_number != number:  # an empty line still counts, so numbers match the file's
            self._last_number, self.lines_read = number, self.lines_read + 1
        return out

    def feed(self, line: Line) -> list[StreamFinding]:
        if line.number != self._last_number:  # CR-separated segments share their line's number
            self.lines_read += 1
            self._last_number = line.number
        facts = parse_line(line.text, line.number)
        if not facts:
            return []
        out: list[StreamFinding] = []
        for fact in facts:
            if self._run.facts and starts_new_run(self._run, fact):
                out += self._end_run()
                self._run = Run(self._run.index + 1)
            self._keep(fact)
        # Judge once per line, after all its facts: an error line often states the specific cause
        # and the exception together, and the specific rule must win over the fallback.
        return out + self._judge_line(line.number)

    def finish(self) -> list[StreamFinding]:
        """End of input: judge the current run with everything known, as batch mode does."""
        out = self._end_run() if self._run.facts else []
        self._run = Run(self._run.index + 1)
        return out

    def flush(self) -> list[StreamFinding]:
        """The input went quiet: judge the current run whole, as batch mode would judge the log so far."""
        if not self._run.facts:
            return []
        self._run.events = place(self._run)
        return self._settle(match_run(self._run, self._rules), final=True)

    @property
    def findings(self) -> list[StreamFinding]:
        """The findings standing now: settled ones of ended runs, then the current run's."""
        current = [StreamFinding(self.source, self._run.index, finding(m)) for m in self._active.values()]
        return self._final + current

    def _keep(self, fact: Fact) -> None:
        facts = self._run.facts
        facts.append(fact)
        same_kind = [i for i, f in enumerate(facts) if f.kind == fact.kind]
        if len(same_kind) > KEEP_FIRST + KEEP_LAST:
            del facts[same_kind[KEEP_FIRST]]

    def _judge_line(self, number: int) -> list[StreamFinding]:
        run = self._run
        run.events = place(run)
        fresh = [e for e in run.events if e.line == number and e.kind not in END_OF_RUN_KINDS]
        # A fallback ("the engine failed to start") is only right when nothing more specific follows, and
        # vLLM prints "EngineCore failed to start." before the traceback that names the cause: fallbacks
        # wait for the whole-run judgement at the end of the run, at finish() or at flush().
        rules = tuple(r for r in self._rules if r.code not in self._seen and not r.fallback)
        return self._settle(match_run(run, rules, fresh), final=False) if fresh and rules else []

    def _end_run(self) -> list[StreamFinding]:
        out = self.flush()
        self._final += [StreamFinding(self.source, self._run.index, finding(m)) for m in self._active.values()]
        self._active, self._seen = {}, set()
        return out

    def _settle(self, matches: list[Match], final: bool) -> list[StreamFinding]:
        """Report new matches, retract reported ones that the new ones supersede.

        At the end of a run `matches` is the whole-run judgement: it replaces the standing set, so the
        final findings equal batch mode's even where a streamed one rested on less evidence.
        """
        candidates = matches if final else list(self._active.values()) + matches
        kept = {m.rule.code: m for m in without_superseded(candidates)}
        out = [StreamFinding(self.source, self._run.index, finding(m), retracted=True)
               for code, m in self._active.items() if code not in kept]
        out += [StreamFinding(self.source, self._run.index, finding(m))
                for code, m in kept.items() if code not in self._seen]
        self._seen |= kept.keys()
        self._active = kept
        self.verdicts[self._run.index] = verdict(self._run, list(kept.values()))
        return out
