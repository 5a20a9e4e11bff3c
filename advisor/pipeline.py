"""The one place the stages are composed: a log -> lines -> facts -> runs -> findings -> the report.

Two paths give the same facts, and so byte for byte the same report: the plain one parses every
line with the grammar; the fast one (advisor.fast) parses only the lines a literal prefilter finds.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor

from advisor.fast import background, scan
from advisor.fast.background import ProcessDied
from advisor.fast.packed_report import PendingReport
from advisor.ingest import sources
from advisor.parse.facts import Fact
from advisor.plan import model as model_shape
from advisor.report.build import build_report, parse
from advisor.report.contract import Report

# A log is a path (str or os.PathLike; '-' is stdin), its bytes, or an iterable of its lines.
Log = str | os.PathLike[str] | bytes | Iterable[str]
__all__ = ["Log", "PendingReport", "ProcessDied", "analyze", "display_name", "facts", "pending", "pending_many"]


def analyze(
    log: Log, command: str | None = None, *, name: str | None = None, fast: bool = True, model_dir: str | None = None
) -> Report:
    """The report of a log; `command` is the launch command to correct when the log does not show it;
    `model_dir`, the served model's folder on this machine, whose config sizes what the log does not."""
    if fast:  # the same Report as the plain path's, its events made from the facts
        return pending(log, command, name=name, model_dir=model_dir).report().as_report()
    return build_report(facts(log, fast=False), name or display_name(log), command, served_model(model_dir))


def pending(
    log: Log, command: str | None = None, *, name: str | None = None, model_dir: str | None = None
) -> PendingReport:
    """The fast path's report while it is being made: its JSON can be written before it is finished."""
    return PendingReport(facts(log), name or display_name(log), command, served_model(model_dir))


def served_model(model_dir: str | None) -> model_shape.ModelShape | None:
    """The shape of the model in this folder (config.json, safetensors headers); PlanError if unreadable."""
    return model_shape.load(model_dir) if model_dir else None


def pending_many(
    paths: list[str], command: str | None = None, model_dir: str | None = None
) -> list[PendingReport | BaseException]:
    """The reports of several logs, in order, their lines read in parallel on the cores this process
    may use; a log that cannot be read gives its error in its place."""
    model = served_model(model_dir)
    workers = min(len(paths), scan.usable_cores())
    results: Iterable[list[Fact] | BaseException]
    if workers < 2 or not background.can_fork():
        results = map(_facts_or_error, paths)
    else:
        # Forked workers, one log each at a time; a big log is then read by one process, not in parts.
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
        with pool:
            results = list(pool.map(_facts_or_error, paths, itertools.repeat(1)))
    return [
        result if isinstance(result, BaseException) else PendingReport(result, display_name(path), command, model)
        for path, result in zip(paths, results, strict=True)
    ]


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
