"""Reports of big logs: the events stay facts until written, then go out a batch at a time."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any, TextIO, overload

from advisor.fast import background
from advisor.parse.facts import Fact
from advisor.plan.model import ModelShape
from advisor.report import writer
from advisor.report.build import Diagnosis, diagnose
from advisor.report.contract import EventOut, Report, Verdict
from advisor.timeline.kinds import TRACEBACK_KINDS

# Events from which a forked process writes them while this one works out the rest of the report:
# below it, starting the process costs more than writing the events takes.
BACKGROUND_MIN = 5_000


class EventsView(Sequence[EventOut]):
    """A report's events read from its facts: an EventOut is made on access, never kept."""

    def __init__(self, facts: Iterable[Fact]):
        self.facts = [fact for fact in facts if fact.kind not in TRACEBACK_KINDS]

    def __len__(self) -> int:
        return len(self.facts)

    @overload
    def __getitem__(self, index: int) -> EventOut: ...
    @overload
    def __getitem__(self, index: slice) -> list[EventOut]: ...
    def __getitem__(self, index: int | slice) -> EventOut | list[EventOut]:
        if isinstance(index, slice):
            return [_event(fact) for fact in self.facts[index]]
        return _event(self.facts[index])


def _event(fact: Fact) -> EventOut:
    return EventOut(line=fact.line, kind=fact.kind, values=fact.values)


class PackedReport(Report):
    """A Report whose `events` is an EventsView; its JSON is byte for byte what Report writes."""

    @classmethod
    def of(cls, report: Report, events: EventsView) -> PackedReport:
        """This report, but for its events, which are these."""
        return cls.model_construct(report.model_fields_set, **{**report.__dict__, "events": events})

    def as_report(self, events: list[EventOut] | None = None) -> Report:
        """This report as a plain Report, with these events (default: all of them, made into a list)."""
        fields = {**self.__dict__, "events": list(self.events) if events is None else events}
        return Report.model_construct(self.model_fields_set, **fields)

    # Whoever wants the whole report as data gets the plain Report's, events and all.
    def model_dump(self, **options: Any) -> dict[str, Any]:
        if "events" in (options.get("exclude") or ()):  # the JSON writer, which writes the events itself
            return super().model_dump(**options)
        return self.as_report().model_dump(**options)

    def model_dump_json(self, **options: Any) -> str:
        return self.as_report().model_dump_json(**options)


def packed_report(
    facts: list[Fact], source: str, user_command: str | None = None, model: ModelShape | None = None
) -> PackedReport:
    """The report of these facts, its events a view of them."""
    return PendingReport(facts, source, user_command, model).report()


class PendingReport:
    """The report of a log while it is being made. Its JSON starts with the events, known from the
    facts alone: for a big log a forked process writes them while this one works out the rest
    (runs, rules, findings), which follows them."""

    def __init__(
        self, facts: list[Fact], source: str, user_command: str | None = None, model: ModelShape | None = None
    ):
        self.facts, self.source, self.user_command, self.model = facts, source, user_command, model
        self.events = EventsView(facts)
        self.done: PackedReport | None = None
        self.diagnosis: Diagnosis | None = None

    def report(self) -> PackedReport:
        if self.done is None:
            self.diagnosis = diagnose(self.facts, self.source, self.user_command, self.model)
            self.done = PackedReport.of(self.diagnosis.report, self.events)
        return self.done

    def diagnosed(self) -> Diagnosis:
        """The runs and matches behind the report (what `--metrics` settles)."""
        self.report()
        assert self.diagnosis is not None
        return self.diagnosis

    def write_json(self, stream: TextIO) -> None:
        events = self.events
        if self.done is not None or len(events) < BACKGROUND_MIN or not _has_descriptor(stream):
            self.report().write_json(stream)
            return
        stream.flush()  # what the forked process found unwritten in the buffer, it would write again
        # Only the schema and the source come before the events: a report of nothing writes them.
        opening = writer.opening(Report(source=self.source, verdict=Verdict(phase="unknown", failure="none")))
        events_writer = background.start(_write_all, itertools.chain([opening], writer.event_batches(events)), stream)
        try:
            report = self.report()
            events_writer.result()  # the events are out (or the error that stopped them is raised here)
        finally:
            events_writer.cancel()  # an error here leaves no process behind
        stream.write(writer.closing(report))


def _write_all(pieces: Iterable[str], stream: TextIO) -> None:
    for piece in pieces:
        stream.write(piece)
    stream.flush()


def _has_descriptor(stream: TextIO) -> bool:
    # A forked process writes to a file or a pipe; what it writes into an in-memory stream stays in its copy.
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True
