"""Wrapping never changes the verdict: every fixture, wrapped as operators' tools print it, reads the same."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from functools import cache
from itertools import cycle
from pathlib import Path

import pytest
from conftest import FIXTURES, tiered, tiers

from advisor.fast import scan
from advisor.ingest import sources
from advisor.report.build import analyze, parse

LOGS = sorted(FIXTURES.rglob("*.log"))

# What operators' hosts and containers are called; cycled so one file mixes identifiers and locales.
IDENTIFIERS = ["vllm[7704]", "python3[2211]", "bash[1893]", "vllm-serve.sh[88]", "vllm"]
MONTHS = ["Nov", "Mär", "déc.", "dic", "janv.", "Okt", "11月"]
LEVEL = re.compile(rb"\b(DEBUG|INFO|WARNING|ERROR|CRITICAL)\b")
# journald stores a MESSAGE that is not printable UTF-8 as a list of byte values.
UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def journal_short(number: int, line: bytes) -> bytes:
    month = MONTHS[number % len(MONTHS)]
    day = f"{number % 28 + 1:2d}" if number % 2 else f"{number % 28 + 1:02d}"
    identifier = IDENTIFIERS[number % len(IDENTIFIERS)]
    return f"{month} {day} 09:{number // 60 % 60:02d}:{number % 60:02d} gpu-node-3 {identifier}: ".encode() + line


def journal_short_iso(number: int, line: bytes) -> bytes:
    offset = "+01:00" if number % 2 else "+0100"  # systemd >= 254 prints the colon
    return f"2026-11-29T09:50:{number % 60:02d}{offset} gpu-node-3 vllm[7704]: ".encode() + line


def journal_short_precise(number: int, line: bytes) -> bytes:
    return f"Nov 29 09:50:{number % 60:02d}.{number * 7919 % 10**6:06d} vllm-lxc python3[2211]: ".encode() + line


def journal_record(line: bytes, as_bytes: bool) -> dict:
    record = {
        "__CURSOR": "s=4f2d;i=1a2b",
        "_HOSTNAME": "gpu-node-3",
        "SYSLOG_IDENTIFIER": "vllm",
        "_PID": "7704",
        "PRIORITY": "6",
    }
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        text, as_bytes = "", True
    if not line:
        record["MESSAGE"] = None  # journald's null for a field it did not keep
    elif as_bytes or UNPRINTABLE.search(text):
        record["MESSAGE"] = list(line)
    else:
        record["MESSAGE"] = text
    return record


def journal_json(number: int, line: bytes) -> bytes:
    return json.dumps(journal_record(line, as_bytes=False)).encode()


def journal_json_bytes(number: int, line: bytes) -> bytes:
    return json.dumps(journal_record(line, as_bytes=number % 2 == 0), ensure_ascii=False).encode()


def compose(number: int, line: bytes) -> bytes:
    return b"vllm-1  | " + line


def compose_colour(number: int, line: bytes) -> bytes:
    return b"\x1b[36mvllm-1  | \x1b[0m" + line


def kubectl_timestamps(number: int, line: bytes) -> bytes:
    return f"2026-11-29T09:50:{number % 60:02d}.{number * 104729 % 10**9:09d}Z ".encode() + line


def kubectl_prefix(number: int, line: bytes) -> bytes:
    return b"[pod/vllm-7d9f8b6c4-x2k9p/vllm] " + line


def kubectl_prefix_timestamps(number: int, line: bytes) -> bytes:
    return kubectl_prefix(number, kubectl_timestamps(number, line))


def ansi_level(number: int, line: bytes) -> bytes:
    return LEVEL.sub(lambda level: b"\x1b[1;32m" + level[1] + b"\x1b[0m", line, count=1)


def caret_level(number: int, line: bytes) -> bytes:
    return LEVEL.sub(lambda level: b"^[[1;32m" + level[1] + b"^[[0m", line, count=1)


def crlf(number: int, line: bytes) -> bytes:
    return line + b"\r"


def cat(number: int, line: bytes) -> bytes:
    return line


PER_LINE: dict[str, Callable[[int, bytes], bytes]] = {
    "journalctl-short": journal_short,
    "journalctl-short-iso": journal_short_iso,
    "journalctl-short-precise": journal_short_precise,
    "journalctl-json": journal_json,
    "journalctl-json-bytes": journal_json_bytes,
    "journalctl-cat": cat,
    "compose": compose,
    "compose-colour": compose_colour,
    "kubectl-timestamps": kubectl_timestamps,
    "kubectl-prefix": kubectl_prefix,
    "kubectl-prefix-timestamps": kubectl_prefix_timestamps,
    "ansi-level": ansi_level,
    "caret-level": caret_level,
    "crlf": crlf,
}


def wrap_lines(data: bytes, wrap: Callable[[int, bytes], bytes]) -> bytes:
    physical = data.split(b"\n")
    last = physical.pop() if not physical[-1] else None  # the final newline is not a line
    wrapped = [wrap(number, line) for number, line in enumerate(physical, 1)]
    return b"\n".join(wrapped + ([last] if last is not None else []))


def mixed(data: bytes) -> bytes:
    """A file whose every line is wrapped by the next form in turn (a file may mix forms)."""
    forms = cycle(PER_LINE.values())
    return wrap_lines(data, lambda number, line: next(forms)(number, line))


WHOLE_FILE: dict[str, Callable[[bytes], bytes]] = {
    **{name: (lambda data, wrap=wrap: wrap_lines(data, wrap)) for name, wrap in PER_LINE.items()},
    "mixed": mixed,
    "gzip": gzip.compress,
    "compose-gzip": lambda data: gzip.compress(wrap_lines(data, compose)),
}


def report_of(data: bytes) -> dict:
    """The report as JSON data, without the source name (the one thing wrapping may change)."""
    report = analyze(sources.lines(_chunks(data)), "log").to_dict()
    report.pop("source")
    return report


def _chunks(data: bytes):
    # Read in small chunks so line splitting across chunk borders is exercised too.
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return (data[i : i + 4096] for i in range(0, len(data), 4096))


@cache
def original_lines(path: Path) -> list[sources.Line]:
    # By path: the live releases' folders repeat the same file names (v0.26.0/healthy.log, ...).
    return list(sources.lines(_chunks(path.read_bytes())))


@cache
def original_report(path: Path) -> dict:
    return report_of(path.read_bytes())


@cache
def original_facts(path: Path) -> list:
    return parse(iter(original_lines(path)))


@pytest.mark.parametrize("form", sorted(WHOLE_FILE))
@pytest.mark.parametrize("log", tiered(LOGS), ids=[p.name[:3] if p.name[0].isdigit() else p.stem for p in LOGS])
def test_wrapping_keeps_the_report(log, form):
    data = WHOLE_FILE[form](log.read_bytes())
    if list(sources.lines(_chunks(data))) == original_lines(log):
        return  # the analysis reads nothing but these numbered lines: the same lines, the same report
    expected = original_report(log)
    wrapped = report_of(data)
    assert wrapped["verdict"] == expected["verdict"], f"{log.name} wrapped as {form}"
    assert wrapped["events"] == expected["events"], f"{log.name} wrapped as {form}"
    assert wrapped == expected, f"{log.name} wrapped as {form}"


def test_same_lines_give_the_same_report():
    # What lets test_wrapping_keeps_the_report stop at equal lines: the report is a function of them.
    log = FIXTURES / "corpus" / "011-v0-kv-too-small-v072-mq-engine-131k.log"
    lines = original_lines(log)
    assert analyze(iter(lines), "log") == analyze(sources.lines(_chunks(log.read_bytes())), "log")
    assert analyze(iter(lines[:2]), "log") != analyze(iter(lines), "log")


@pytest.mark.parametrize("form", sorted(WHOLE_FILE))
@pytest.mark.parametrize("logs", tiers(LOGS))
def test_fast_path_reads_wrapped_lines_as_the_plain_path(logs, form):
    # The fast path reads lines of a known shape straight from the raw bytes, wrapper and all.
    for log in logs:
        data = WHOLE_FILE[form](log.read_bytes())
        lines = list(sources.lines(_chunks(data)))
        plain = original_facts(log) if lines == original_lines(log) else parse(iter(lines))
        assert scan.scan_chunks(_chunks(data)) == plain, f"{log.name} wrapped as {form}"


def test_forms_really_wrap():
    # Guard against a form that silently leaves the log alone (all but `cat` must change the bytes).
    data = (FIXTURES / "corpus" / "011-v0-kv-too-small-v072-mq-engine-131k.log").read_bytes()
    unchanged = [name for name, wrap in WHOLE_FILE.items() if wrap(data) == data]
    assert unchanged == ["journalctl-cat"]


# Real logs the advisor reads nothing of yet, each listed with its mechanism in tests/snapshots/test_wild.py.
UNREAD = {"24113", "24209", "25110", "27214", "32509", "34306", "39116"}


@pytest.mark.parametrize("logs", tiers(LOGS))
def test_wrapped_fixtures_are_nontrivial(logs):
    # The comparison means something only if each original has a verdict or events to lose.
    empty = [
        p.name for p in logs if not original_report(p)["events"] and original_report(p)["verdict"]["phase"] == "unknown"
    ]
    assert empty == [p.name for p in logs if p.name.split("-")[0] in UNREAD]
