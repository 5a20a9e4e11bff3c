"""The one JSON writer of reports, small or big: its bytes are the project's (Python's json, whose
floats are their repr), not a serialization library's, whose number formatting may change.

The events are written a batch at a time, from EventOut objects or, for a big log, straight from
its facts (anything with line, kind and values, or with names and numbers).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import fields, is_dataclass
from functools import cache
from typing import Any

from advisor.parse.facts import Number

# Kinds and value names that JSON writes without escapes; an event with another name is written
# by json.dumps, as is one with a number that is not a plain int or a finite float.
PLAIN_NAME = re.compile(r"[A-Za-z0-9_]+\Z")
BATCH = 2048  # events per written piece: few write calls, small pieces


def to_json(report: Any) -> str:
    return "".join(json_parts(report))


def json_parts(report: Any, events: Sequence[Any] | None = None) -> Iterator[str]:
    """The report's JSON in pieces, to write a big report without holding it whole; its events are
    these (facts or EventOuts) when given, else its own."""
    events = report.events if events is None else events
    if not len(events):
        yield opening(report, events=False) + closing(report, events=False)
        return
    yield opening(report)
    yield from event_batches(events)
    yield closing(report)


def opening(report: Any, events: bool = True) -> str:
    """The JSON before the first event: only the schema and the source come before the events."""
    head = {key: value for key, value in _fields(report).items() if key in ("schema", "source")}
    text = "{\n" + "".join(f"  {_dumps(key)}: {_value(value)},\n" for key, value in head.items())
    return text + ('  "events": [\n' if events else '  "events": []')


def closing(report: Any, events: bool = True) -> str:
    """The JSON after the last event."""
    rest = {key: value for key, value in _fields(report).items() if key not in ("schema", "source")}
    text = "\n  ]" if events else ""
    return text + "".join(f",\n  {_dumps(key)}: {_value(value)}" for key, value in rest.items()) + "\n}"


def event_batches(events: Sequence[Any]) -> Iterator[str]:
    """The events (facts or EventOuts), four spaces in, separated by commas, a batch at a time."""
    for start in range(0, len(events), BATCH):
        batch = ",\n".join(event_json(event) for event in events[start : start + BATCH])
        yield batch + (",\n" if start + BATCH < len(events) else "")


def event_json(event: Any) -> str:
    """One event as it sits in the events list, four spaces in."""
    names, numbers = (
        (event.names, event.numbers)
        if hasattr(event, "numbers")
        else (tuple(event.values), tuple(event.values.values()))
    )
    template = _template(event.kind, names)
    if template is None or not _plain_numbers(numbers):
        text = _dumps(
            {"line": event.line, "kind": event.kind, "values": dict(zip(names, map(_finite, numbers), strict=True))}
        )
        return "    " + text.replace("\n", "\n    ")
    return template % (event.line, *numbers)


@cache
def _template(kind: str, names: tuple[str, ...]) -> str | None:
    """The %-template of an event of this kind with these value names; None when a name needs escapes."""
    if not PLAIN_NAME.match(kind) or not all(map(PLAIN_NAME.match, names)):
        return None
    values = "{\n" + ",\n".join(f'        "{name}": %r' for name in names) + "\n      }" if names else "{}"
    return f'    {{\n      "line": %d,\n      "kind": "{kind}",\n      "values": {values}\n    }}'


def _plain_numbers(numbers: tuple[Number, ...]) -> bool:
    """Whether %r writes each number as json.dumps does (one loop: it runs once per event)."""
    for value in numbers:  # noqa: SIM110  (all() over a generator is slower here)
        # A bool's repr is not JSON, nor is a non-finite float's (inf - inf is nan only for those).
        if type(value) is not int and not (type(value) is float and value - value == 0):
            return False
    return True


def plain(value: Any, leave_out: tuple[str, ...] = ()) -> Any:
    """A dataclass of the contract as its JSON holds it: dicts, lists and values, in field order
    (dataclasses.asdict, without copying each value)."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value) if f.name not in leave_out}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


def _fields(report: Any) -> dict[str, Any]:
    # The events are written apart, a batch at a time.
    written: dict[str, Any] = plain(report, leave_out=("events",))
    written["facts"] = {name: _finite(value) for name, value in written.get("facts", {}).items()}
    return written


def _finite(value: Any) -> Any:
    # JSON has no inf or nan: such a number is written as null, which says "no usable value".
    return None if type(value) is float and value - value != 0 else value


def _value(value: Any) -> str:
    return _dumps(value).replace("\n", "\n  ")


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
