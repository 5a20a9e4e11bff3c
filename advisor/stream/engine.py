"""Streaming engine: the batch grammar, timeline and rules fed one line at a time, emitting findings once per run."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

from advisor.fast.candidates import CandidateReader, scan_buffer
from advisor.fast.prefilter import matcher
from advisor.ingest import prefixes, sources
from advisor.ingest.sources import MAX_LINE
from advisor.parse.facts import Fact
from advisor.report.build import finding, verdict
from advisor.report.contract import StreamFinding, Verdict
from advisor.rules.match import Match, match_run, without_superseded
from advisor.rules.schema import CLEARING_FAILURES, load_rules
from advisor.timeline.events import Event, Run
from advisor.timeline.placement import Context, Placer, place
from advisor.timeline.runs import starts_new_run

# Memory stays bounded on a server that runs for months: of each kind of fact the current run keeps
# the first ones (where startup facts, the first exception and the first stats live, as batch reads them)
# and the latest ones (the window the next stats line and traceback are judged in).
KEEP_FIRST = 16
KEEP_LAST = 16
# A stub placed at the end of a run cut inside a traceback: only judged when the run ends.
END_OF_RUN_KINDS = {"incomplete_traceback"}
# What a later stats line must show for a state that can end (CLEARING_FAILURES: the cache filled up,
# requests were preempted) to have ended: no request waiting and the cache clearly below the 90% that
# R103 flags, so a cache hovering at the threshold does not flap between finding and recovery.
RECOVERED_BELOW_PCT = 80.0


class StreamEngine:
    """Feed lines, collect findings as soon as they are decidable; `finish()` judges the last run whole."""

    def __init__(self, source: str = "<stream>"):
        self.source = source
        self.lines_read = 0
        self._last_number = 0
        # Bytes not read yet: the start of a line whose end has not arrived, and the lines before it
        # that a message cut at its line's end may need to read on into.
        self._pending = b""
        self._skip = 0  # offset in _pending before which the lines were read on into already
        self._find_hits = matcher()
        self._read = CandidateReader()
        # The lines a per-line prefix is learned from (ingest.prefixes), until it is or the head is read.
        self._head: bytes | None = b""
        self.verdicts: dict[int, Verdict] = {}
        self._rules = load_rules()
        self._run = Run(0)
        # The current run's placement, kept while its context holds: the facts kept since it was made
        # are placed alone (by id: a fact dropped from the window leaves with its event).
        self._placer: tuple[Run, Placer] | None = None
        self._placed: dict[int, Event] = {}
        self._unplaced: dict[int, Fact] = {}
        self._active: dict[str, Match] = {}  # rule code -> the match reported and not retracted
        self._seen: set[str] = set()  # rule codes reported in the current run, retracted or not
        self._recovered: set[str] = set()  # reported codes whose state has cleared since; they may come back
        self._final: list[StreamFinding] = []  # the settled findings of runs already ended

    def feed_bytes(self, data: bytes) -> list[StreamFinding]:
        """Bytes as read, cut anywhere; lines are numbered as the input numbers them.

        One literal search over the whole chunk finds the lines that can carry a fact (the batch fast
        path's prefilter): the others only count, with no Python work per line. A message cut by its
        line's end waits for the lines that may continue it.
        """
        pending = self._pending + data
        cut = pending.rfind(b"\n") + 1
        self._pending = pending[cut:][:MAX_LINE]  # never buffer an endless line
        return self._feed_block(pending[:cut]) if cut else []

    def feed_raw(self, raw: bytes | str) -> list[StreamFinding]:
        """One physical line as read (wrappers, colour codes, CR-redrawn segments), numbered in arrival
        order; newlines inside it separate its segments, as CRs do."""
        data = raw.encode("utf-8", errors="surrogateescape") if isinstance(raw, str) else raw
        return self.feed_bytes(data.rstrip(b"\n").replace(b"\n", b"\r") + b"\n")

    def _feed_block(self, block: bytes, final: bool = False) -> list[StreamFinding]:
        """Whole lines: parse the candidates, count the rest; keep back those that wait for more lines."""
        out: list[StreamFinding] = []
        if self._head is not None:
            self._learn_prefix(block)

        def read(buffer: bytes | bytearray, start: int, stop: int, number: int, last: bool) -> int | None:
            found = self._read(buffer, start, stop, number, last)
            if found is None:
                return None
            out.extend(self._feed_facts(found[0], number))
            return found[1]

        first = self._last_number
        number, resume, skip = scan_buffer(block, len(block), first, self._skip, self._find_hits, read, final)
        if resume is None:
            self._skip = max(0, skip - len(block))
        else:
            self._pending, self._skip = block[resume:] + self._pending, 0
        self._last_number = number
        self.lines_read += number - first
        return out

    def _learn_prefix(self, block: bytes) -> None:
        """Learn the log's per-line prefix from the lines so far, as the batch path does from its head:
        a stream's reader reads with it from the block that showed it on."""
        self._head = (self._head or b"") + block
        learned = sources.learned_prefix(self._head)
        if learned is not None:
            self._read = CandidateReader(learned)
        if (
            learned is not None
            or self._head.count(b"\n") >= prefixes.HEAD_LINES
            or len(self._head) >= prefixes.HEAD_BYTES
        ):
            self._head = None

    def _feed_facts(self, facts: list[Fact], number: int) -> list[StreamFinding]:
        if not facts:
            return []
        out: list[StreamFinding] = []
        for fact in facts:
            if self._run.facts and starts_new_run(self._run.kinds(), fact):
                out += self._end_run()
                self._run = Run(self._run.index + 1)
            self._keep(fact)
        # Judge once per line, after all its facts: an error line often states the specific cause
        # and the exception together, and the specific rule must win over the fallback.
        return out + self._judge_line(number) + self._recoveries(facts)

    def finish(self) -> list[StreamFinding]:
        """End of input: judge the current run with everything known, as batch mode does."""
        pending, self._pending = self._pending, b""
        # The lines kept back, and a last line without its newline.
        out = self._feed_block(pending if pending.endswith(b"\n") else pending + b"\n", final=True) if pending else []
        out += self._end_run() if self._run.facts else []
        self._run = Run(self._run.index + 1)
        return out

    def flush(self) -> list[StreamFinding]:
        """The input went quiet: judge the current run whole, as batch mode would judge the log so far."""
        if not self._run.facts:
            return []
        self._run.events = place(self._run)
        return self._settle(match_run(self._run, self._rules), final=True)

    @property
    def run_index(self) -> int:
        """The run the lines read so far end in (what a finding from elsewhere, the metrics, belongs to)."""
        return self._run.index

    @property
    def findings(self) -> list[StreamFinding]:
        """The findings standing now: settled ones of ended runs, then the current run's."""
        current = [StreamFinding(self.source, self._run.index, finding(m)) for m in self._active.values()]
        return self._final + current

    def _keep(self, fact: Fact) -> None:
        facts = self._run.facts
        facts.append(fact)
        self._unplaced[id(fact)] = fact
        same_kind = [i for i, f in enumerate(facts) if f.kind == fact.kind]
        if len(same_kind) > KEEP_FIRST + KEEP_LAST:
            dropped = facts.pop(same_kind[KEEP_FIRST])
            self._unplaced.pop(id(dropped), None)
            self._placed.pop(id(dropped), None)

    def _place(self) -> None:
        """Place the current run's facts: only those kept since the last time, while the run's context
        (what placing a fact reads of the whole run) is what it was; else all of them again.

        A stats line's judgement so costs one fact's placing, not the whole window's. Where the window
        dropped a fact, the events after it keep the place they had with it: as batch mode, which
        keeps every fact, places them.
        """
        run = self._run
        context = Context.of(run)
        if self._placer is None or self._placer[0] is not run or self._placer[1].context != context:
            self._placer, self._placed, fresh = (run, Placer(context)), {}, run.facts
        else:
            fresh = list(self._unplaced.values())
        self._unplaced = {}
        placer = self._placer[1]
        self._placed.update((id(event.fact), event) for event in placer.place(fresh))
        run.events = placer.finish(run, list(self._placed.values()))

    def _judge_line(self, number: int) -> list[StreamFinding]:
        run = self._run
        # Only rules that can fire on this line's kinds and are not reported yet: once a run's client
        # errors are reported, a server answering many 404s costs no judgement per line.
        kinds = {f.kind for f in run.facts if f.line == number}
        # A fallback ("the engine failed to start") is only right when nothing more specific follows, and
        # vLLM prints "EngineCore failed to start." before the traceback that names the cause: fallbacks
        # wait for the whole-run judgement at the end of the run, at finish() or at flush().
        rules = tuple(
            r
            for r in self._rules
            if (r.code not in self._seen or r.code in self._recovered)
            and not r.fallback
            and kinds.intersection(r.event)
        )
        if not rules:
            return []
        self._place()
        fresh = [e for e in run.events if e.line == number and e.kind not in END_OF_RUN_KINDS]
        return self._settle(match_run(run, rules, fresh), final=False) if fresh else []

    def _end_run(self) -> list[StreamFinding]:
        out = self.flush()
        self._final += [StreamFinding(self.source, self._run.index, finding(m)) for m in self._active.values()]
        self._active, self._seen, self._recovered = {}, set(), set()
        return out

    def _settle(self, matches: list[Match], final: bool) -> list[StreamFinding]:
        """Report new matches, retract reported ones that the new ones supersede.

        At the end of a run `matches` is the whole-run judgement: it replaces the standing set, so the
        final findings equal batch mode's even where a streamed one rested on less evidence.
        """
        candidates = matches if final else list(self._active.values()) + matches
        kept = {m.rule.code: m for m in without_superseded(candidates)}
        out = [
            StreamFinding(self.source, self._run.index, finding(m), "retraction")
            for code, m in self._active.items()
            if code not in kept
        ]
        # A state that cleared and came back is news again; the whole-run judgement only restates it.
        again = set() if final else self._recovered & {m.rule.code for m in matches}
        out += [
            StreamFinding(self.source, self._run.index, finding(m))
            for code, m in kept.items()
            if code not in self._seen or code in again
        ]
        self._seen |= kept.keys()
        self._recovered -= again
        self._active = kept
        self.verdicts[self._run.index] = verdict(self._run, list(kept.values()))
        return out

    def _recoveries(self, facts: list[Fact]) -> list[StreamFinding]:
        """A stats line showing no request waiting and room in the cache clears the reported degradations."""
        stats = next((f for f in reversed(facts) if f.kind == "stats"), None)
        if (
            stats is None
            or stats.values.get("waiting_reqs", 1) > 0
            or stats.values.get("kv_cache_usage_pct", 100.0) >= RECOVERED_BELOW_PCT
        ):
            return []
        out = []
        for code, match in self._active.items():
            if code in self._recovered or match.rule.failure not in CLEARING_FAILURES or match.event.line >= stats.line:
                continue
            if match.event.kind == "stats" and _engine(match.event.fact) != _engine(stats):
                continue  # one engine of several (data parallel) emptying its queue says nothing of the others
            reported = finding(match)
            message = (
                f"Cleared: KV cache usage {stats.values['kv_cache_usage_pct']:g}% and no request waiting, "
                f"after the {reported.name} reported at line {reported.line}."
            )
            cleared = replace(reported, line=stats.line, severity="info", message=message, remediations=[])
            out.append(StreamFinding(self.source, self._run.index, cleared, "recovery"))
            self._recovered.add(code)
        return out


def _engine(stats: Fact) -> tuple[str | None, float | None]:
    """Which engine a stats line is about, as the timeline tells engines apart."""
    return stats.process, stats.values.get("engine")


def follow_lines(lines: Iterable[str | bytes], source: str = "<stream>") -> Iterator[StreamFinding]:
    """Each finding (or retraction, or recovery) as soon as the lines so far decide it; the last run
    is judged whole when the lines end."""
    engine = StreamEngine(source)
    for line in lines:
        yield from engine.feed_raw(line)
    yield from engine.finish()
