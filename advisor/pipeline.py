"""The one place the stages are composed: a log -> lines -> facts -> runs -> findings -> the report.

Two paths give the same facts, and so byte for byte the same report: the plain one parses every
line with the grammar; the fast one (advisor.fast) parses only the lines a literal prefilter finds.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, TextIO

from advisor.fast import background, scan
from advisor.fast.background import ProcessDied
from advisor.ingest import sources
from advisor.parse.facts import Fact
from advisor.report import writer
from advisor.report.build import Diagnosis, build_report, diagnose, event_facts, parse, with_events
from advisor.report.contract import Report, Verdict
from advisor.usage import InputError

if TYPE_CHECKING:
    from advisor.plan.model import ModelShape

# A log is a path (str or os.PathLike; '-' is stdin), its bytes, or an iterable of its lines.
Log = str | os.PathLike[str] | bytes | Iterable[str]
__all__ = [
    "Analysis",
    "Log",
    "ProcessDied",
    "analyses",
    "analysis",
    "analysis_of_file",
    "analyze",
    "display_name",
    "facts",
]

# Events from which a forked process writes them while this one diagnoses the log: below it,
# starting the process costs more than writing the events takes.
BACKGROUND_MIN = 5_000


def analyze(
    log: Log, command: str | None = None, *, name: str | None = None, fast: bool = True, model_dir: str | None = None
) -> Report:
    """The report of a log; `command` is the launch command to correct when the log does not show it;
    `model_dir`, the served model's folder on this machine, whose config sizes what the log does not."""
    if fast:  # the same Report as the plain path's
        return analysis(log, command, name=name, model_dir=model_dir).report()
    return build_report(facts(log, fast=False), name or display_name(log), command, served_model(model_dir))


def analysis(
    log: Log, command: str | None = None, *, name: str | None = None, model_dir: str | None = None
) -> Analysis:
    """The log read by the fast path, its diagnosis still to make: its JSON can be written meanwhile."""
    return Analysis(facts(log), name or display_name(log), command, served_model(model_dir))


def served_model(model_dir: str | None) -> ModelShape | None:
    """The shape of the model in this folder (config.json, safetensors headers); PlanError if unreadable."""
    if not model_dir:
        return None
    from advisor.plan import model  # here: only a run given a model folder reads one

    return model.load(model_dir)


def analysis_of_file(path: str, command: str | None = None, model_dir: str | None = None) -> Analysis:
    """The analysis of a log file ('-': stdin); one that cannot be read is InputError's one line."""
    try:
        return analysis(path, command, model_dir=model_dir)
    except (OSError, EOFError, ProcessDied) as error:
        raise unreadable(path, error) from None


def unreadable(path: str, error: BaseException) -> InputError:
    """The one-line error of a log that cannot be read."""
    if isinstance(error, FileNotFoundError):
        return InputError(f"{path}: no such file")
    if isinstance(error, IsADirectoryError):
        return InputError(f"{path}: is a directory, not a log file")
    if isinstance(error, PermissionError):
        return InputError(f"{path}: permission denied")
    if isinstance(error, ProcessDied):
        return InputError(f"{path}: {error}")
    return InputError(f"{path}: cannot read: {error}")  # a truncated .gz, an unreadable device


def analyses(paths: list[str], command: str | None = None, model_dir: str | None = None) -> list[Analysis]:
    """The analyses of several logs, in order, their lines read in parallel on the cores this process
    may use; the first log that cannot be read is InputError's one line."""
    model = served_model(model_dir)
    workers = min(len(paths), scan.usable_cores())
    results: Iterable[list[Fact] | BaseException]
    if workers < 2 or not background.can_fork():
        results = map(_facts_or_error, paths)
    else:
        # Forked workers, one log each at a time; a big log is then read by one process, not in parts.
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
        with pool:
            results = list(pool.map(_facts_or_error, paths, itertools.repeat(1)))
    out = []
    for path, result in zip(paths, results, strict=True):
        if isinstance(result, BaseException):
            raise unreadable(path, result)
        out.append(Analysis(result, display_name(path), command, model))
    return out


def _facts_or_error(path: str, parts: int | None = None) -> list[Fact] | BaseException:
    try:
        return scan.scan_file(path, parts=parts)
    except (OSError, EOFError, ProcessDied) as error:
        return error


def facts(log: Log, *, fast: bool = True) -> list[Fact]:
    """Every fact of the log, in order."""
    if isinstance(log, str | os.PathLike):
        path = os.fspath(log)
        return scan.scan_file(path) if fast else parse(sources.lines(sources.read_chunks(path)))
    chunks = [log] if isinstance(log, bytes) else _line_chunks(log)
    return scan.scan_chunks(chunks) if fast else parse(sources.lines(chunks))


def display_name(log: Log) -> str:
    if isinstance(log, str | os.PathLike):
        return sources.display_name(os.fspath(log))
    return "<bytes>" if isinstance(log, bytes) else "<lines>"


def _line_chunks(lines: Iterable[str]) -> Iterator[bytes]:
    # Lines with or without their newline (a text file object keeps it, str.split("\n") drops it).
    for line in lines:
        yield line.encode("utf-8", "surrogateescape") + (b"" if line.endswith("\n") else b"\n")


class Analysis:
    """A log's facts and, made when first asked, their diagnosis and report. Its JSON starts with
    the events, known from the facts alone: for a big log a forked process writes them while this
    one diagnoses (runs, rules, findings), which follows them."""

    def __init__(self, facts: list[Fact], source: str, command: str | None = None, model: ModelShape | None = None):
        self.facts, self.source, self.command, self.model = facts, source, command, model
        self._diagnosis: Diagnosis | None = None
        self._report: Report | None = None

    def diagnosis(self) -> Diagnosis:
        """The runs and matches behind the report (what `--metrics` settles); its report has no events."""
        if self._diagnosis is None:
            self._diagnosis = diagnose(self.facts, self.source, self.command, self.model)
        return self._diagnosis

    def report(self) -> Report:
        """The whole report, events and all: the plain path's, whichever path read the log."""
        if self._report is None:
            self._report = with_events(self.diagnosis().report, self.facts)
        return self._report

    def write_json(self, stream: TextIO) -> None:
        """The report's JSON, its events written straight from the facts (no event object is made)."""
        events = event_facts(self.facts)
        if self._diagnosis is not None or len(events) < BACKGROUND_MIN or not _has_descriptor(stream):
            _write_all(writer.json_parts(self.diagnosis().report, events), stream)
            return
        stream.flush()  # what the forked process found unwritten in the buffer, it would write again
        # Only the schema and the source come before the events: a report of nothing writes them.
        opening = writer.opening(Report(source=self.source, verdict=Verdict(phase="unknown", failure="none")))
        events_writer = background.start(_write_all, itertools.chain([opening], writer.event_batches(events)), stream)
        try:
            report = self.diagnosis().report
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
