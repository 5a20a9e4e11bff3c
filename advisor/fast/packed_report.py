"""Reports of big logs: the events stay facts until written, then go out a batch at a time."""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from typing import TextIO

from advisor.fast import background
from advisor.fast.templates import PackedFact
from advisor.parse.facts import Fact, Number
from advisor.report.build import PLUMBING, summarize
from advisor.report.contract import EventOut, Report, Verdict

# Kinds and value names that JSON writes without escapes. An event with another name, or with a
# number whose repr() is not pydantic's text for it (see _plain_numbers), is written by pydantic.
PLAIN_NAME = re.compile(r"[A-Za-z0-9_]+\Z")
# How pydantic writes an empty events list; the events go in its place.
EMPTY_EVENTS = '\n  "events": [],\n'
BATCH = 2048  # events per written piece: few write calls, small pieces
# Events from which a forked process writes them while this one works out the rest of the report:
# below it, starting the process costs more than writing the events takes.
BACKGROUND_MIN = 5_000


class EventsView(Sequence[EventOut]):
    """A report's events read from its facts: an EventOut is made on access, never kept."""

    def __init__(self, facts: Iterable[Fact]):
        self.facts = [fact for fact in facts if fact.kind not in PLUMBING]

    def __len__(self) -> int:
        return len(self.facts)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [_event(fact) for fact in self.facts[index]]
        return _event(self.facts[index])


def _event(fact: Fact) -> EventOut:
    return EventOut(line=fact.line, kind=fact.kind, values=fact.values)


class PackedReport(Report):
    """A Report whose `events` is an EventsView; its JSON is byte for byte what Report writes."""

    def to_json(self) -> str:
        return "".join(self.json_parts())

    def json_parts(self) -> Iterator[str]:
        if not self.events:
            yield self.as_report([]).model_dump_json(by_alias=True, indent=2)
            return
        yield from events_json(self.source, self.events)
        yield after_events_json(self)

    def as_report(self, events: list[EventOut] | None = None) -> Report:
        """This report as a plain Report, with these events (default: all of them, made into a list)."""
        fields = {**self.__dict__, "events": list(self.events) if events is None else events}
        return Report.model_construct(self.model_fields_set, **fields)

    # Whoever wants the whole report as data gets the plain Report's, events and all.
    def model_dump(self, **options):
        return self.as_report().model_dump(**options)

    def model_dump_json(self, **options):
        return self.as_report().model_dump_json(**options)


def packed_report(facts: list[Fact], source: str, user_command: str | None = None,
                  events: EventsView | None = None) -> PackedReport:
    """The report of these facts; `events`, when given, is their EventsView, already made."""
    report = summarize(facts, source, user_command, model=PackedReport)
    report.events = EventsView(facts) if events is None else events
    return report


class PendingReport:
    """The report of a log while it is being made. Its JSON starts with the events, known from the
    facts alone: for a big log a forked process writes them while this one works out the rest
    (runs, rules, findings), which follows them."""

    def __init__(self, facts: list[Fact], source: str, user_command: str | None = None):
        self.facts, self.source, self.user_command = facts, source, user_command
        self.events = EventsView(facts)
        self.done: PackedReport | None = None

    def report(self) -> PackedReport:
        if self.done is None:
            self.done = packed_report(self.facts, self.source, self.user_command, self.events)
        return self.done

    def write_json(self, stream: TextIO) -> None:
        events = self.events
        if self.done is not None or len(events) < BACKGROUND_MIN or not _has_descriptor(stream):
            self.report().write_json(stream)
            return
        stream.flush()  # what the forked process found unwritten in the buffer, it would write again
        writer = background.start(_write_all, events_json(self.source, events), stream)
        try:
            report = self.report()
            writer.result()  # the events are out (or the error that stopped them is raised here)
        finally:
            writer.cancel()  # an error here leaves no process behind
        stream.write(after_events_json(report))


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


def events_json(source: str, events: EventsView) -> Iterator[str]:
    """The JSON of a report up to the end of its events list (not empty), a batch at a time."""
    # Only the schema and the source come before the events: a report of nothing writes them.
    nothing = Report(source=source, verdict=Verdict(phase="unknown", failure="none"))
    yield nothing.model_dump_json(by_alias=True, indent=2).split(EMPTY_EVENTS)[0] + '\n  "events": [\n'
    facts = events.facts
    for start in range(0, len(facts), BATCH):
        batch = ",\n".join(event_json(f.line, f.kind, *_names_and_numbers(f)) for f in facts[start:start + BATCH])
        yield batch + (",\n" if start + BATCH < len(facts) else "")


def after_events_json(report: PackedReport) -> str:
    """The JSON of a report from the end of its events list on."""
    head = report.as_report([]).model_dump_json(by_alias=True, indent=2)
    return "\n  ],\n" + head.split(EMPTY_EVENTS)[1]


def event_json(line: int, kind: str, names: tuple[str, ...], numbers: tuple[Number, ...]) -> str:
    """One event as Report.to_json() writes it in the events list, four spaces in."""
    template = _template(kind, names)
    if template is None or not _plain_numbers(numbers):
        text = EventOut(line=line, kind=kind, values=dict(zip(names, numbers))).model_dump_json(indent=2)
        return "    " + text.replace("\n", "\n    ")
    return template % (line, *numbers)


@cache
def _template(kind: str, names: tuple[str, ...]) -> str | None:
    """The %-template of an event of this kind with these value names; None when a name needs escapes."""
    if not PLAIN_NAME.match(kind) or not all(map(PLAIN_NAME.match, names)):
        return None
    values = "{\n" + ",\n".join(f'        "{name}": %r' for name in names) + "\n      }" if names else "{}"
    return f'    {{\n      "line": %d,\n      "kind": "{kind}",\n      "values": {values}\n    }}'


def _names_and_numbers(fact: Fact | PackedFact) -> tuple[tuple[str, ...], tuple[Number, ...]]:
    if isinstance(fact, PackedFact):  # no dict to build
        return fact.names, fact.numbers
    return tuple(fact.values), tuple(fact.values.values())


def _plain_numbers(numbers: tuple[Number, ...]) -> bool:
    """Whether repr() writes each number as pydantic does (one loop: it runs once per event)."""
    for value in numbers:
        # pydantic writes 1e-05 as 0.00001 and inf as null; in this range repr() and pydantic agree.
        if type(value) is not int and not (type(value) is float and (1e-4 <= abs(value) < 1e16 or value == 0)):
            return False
    return True
