"""Unwrap one line: take a journald JSON record's MESSAGE, strip colour codes and shipper prefixes."""

from __future__ import annotations

import json
import re

# CSI sequences (colours, cursor moves), OSC sequences (titles, links), charset switches;
# "^[[1;31m" is how `less` and `cat -v` show a raw ESC, and logs get pasted that way.
# "\ufffd[1;36m" is one whose ESC a copy through a browser turned into the replacement character;
# "#033[1;36m" is rsyslog's escape of it (control characters as "#" and three octal digits).
ANSI = re.compile(
    r"\x1b\[[0-9;?]*[ -/]*[@-~]|\^\[\[[0-9;?]*[A-Za-z]|\ufffd\[[0-9;?]*[A-Za-z]|#033\[[0-9;?]*[A-Za-z]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[()][A-Z0-9]"
)

# A month as strftime's %b prints it in any locale: "Nov", "Mär", "déc.", "dic", "11月".
_MONTH = r"(?:[^\W\d_]{2,5}\.?|\d{1,2}月)"
_SYSLOG_TIME = _MONTH + r" {1,2}\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)?"
_ISO_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
# journalctl's ISO forms always carry a numeric offset ("+0100", "+00:00"); kubectl and docker print "Z".
_JOURNAL_ISO_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?[+-]\d\d:?\d\d"
# A host name, then journalctl's identifier: "vllm[1234]", "python3[88]", "bash[1]", "kernel" (no pid).
_HOST = r"[\w.\-]+"
_IDENTIFIER = r"[^\s\[:]+(?:\[\d+\])?"

# Prefixes put in front of vLLM's own line, each named after the tool that writes it.
WRAPPERS = {
    # journalctl -o short / short-precise / short-iso / short-iso-precise
    "journalctl": re.compile(rf"^(?:{_SYSLOG_TIME}|{_JOURNAL_ISO_TIME}) {_HOST} {_IDENTIFIER}:(?: |$)"),
    # TorchServe "2024-09-13T22:25:38,258 [INFO ] W-9000-model_1.0-stdout MODEL_LOG - "
    "torchserve": re.compile(r"^\S+ \[\w+ ?\] W-\d+-\S+ MODEL_LOG - "),
    # kubectl logs --timestamps, docker logs -t (RFC 3339), CI runners "[2026-02-24T20:21:58Z] "
    "timestamp": re.compile(rf"^(?:{_ISO_TIME}|\[{_ISO_TIME}\])(?: |$)"),
    # kubectl logs --prefix "[pod/name/container] "
    "kubectl_prefix": re.compile(r"^\[pod/[^\]\s]+\](?: |$)"),
    # docker compose logs "vllm-1  | " (the service name is padded to a common width)
    "compose": re.compile(r"^[\w.\-]+ +\|(?: |$)"),
    # Servers built on vLLM that re-log its output through Python's logging (Xinference):
    # "2026-05-20 00:55:15,994 xinference.core.worker 155 ERROR    "
    # (a vLLM logger's name and level stay: they are what shows its records to be vLLM's, parse/records.py)
    "python_logging": re.compile(
        r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} "
        r"(?:(?=vllm\.)|[\w.\-]+ \d+ (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +)"
    ),
    # ... and through column loggers (FastChat, loguru): "2024-04-27 10:13:05 | ERROR | stderr | ",
    # "2024-04-27 10:13:05.123 | INFO     | module:function:42 - "
    # ... and with the process id after the level: "2024-12-19 21:40:35 ERROR 56542 [async_llm_engine.py:64] "
    # (the date goes; the envelope grammar reads the rest)
    "pid_columns": re.compile(
        r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? "
        r"(?=(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d+ \[[\w.\-/]+\.py:\d+\])"
    ),
    "columns": re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? \| *[A-Z]+ *\| [^|]{1,120}?(?: \| | - )"),
    # Log viewers' exports: the time, then tab-separated columns (Anyscale's "worker<TAB><TAB>host<TAB>")
    "tab_columns": re.compile(
        r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\t(?:[^\t]{0,120}\t){0,6}"
    ),
    # A log pasted as a Markdown quote: "> " before each line, nested quotes and a list's bullet too;
    # or copied from a rendered quote, whose bar comes out as "▎" (U+258E).
    "markdown_quote": re.compile(r"^(?:>(?: ?>)*|▎) ?(?:[-*] )?(?=\S)"),
}
# Wrappers nest (compose around journalctl, kubectl --prefix around --timestamps, any of them
# around a k9s frame or a CI timestamp): strip the outer one first, but only so many.
MAX_WRAPPERS = 4
# k9s and other TUIs frame each line in box-drawing bars.
BOX_BAR = "│"
RAY_REPEATED = re.compile(r"\[repeated \d+x across cluster\]\s*$")
# journalctl -o json-seq starts each record with an ASCII record separator.
RECORD_SEPARATOR = "\x1e"
# What clean() cuts out of the middle of a line (colour codes, raw or as `cat -v` shows them, and
# NULs), so a line holding one may hide an anchor from a search of its raw bytes.
CUT_FROM_INSIDE = ("\x1b", "^[[", "\ufffd[", "#033[", "\x00")
# The key of a journald JSON record, whose MESSAGE is decoded (JSON escapes or a list of byte
# values): its anchors may not be in the raw bytes at all.
JOURNAL_KEY = '"MESSAGE"'
# What clean() cuts off a line's end: Ray's deduplication note, and a CR as `cat -v` shows it.
RAY_NOTE = "across cluster]"
CARET_CR = "^M"


# A vLLM process's tag inside its brackets: its name, its ranks (" rank=1", 0.10's " TP1", " PP0_TP0"), its pid.
PROCESS_RANKS = r"(?: rank=\d+| [A-Z]{2}\d+(?:_[A-Z]{2}\d+)*)?"
PROCESS_ID = r"[A-Za-z_][\w\-:.]{0,200}" + PROCESS_RANKS + r" pid=\d+"
# vLLM's own envelope, "(EngineCore pid=8) ERROR 06-22 20:16:34 [core.py:52] " or the older
# "ERROR 06-22 20:16:34 core.py:52] ": found after a prefix no wrapper above names and a space (a
# Markdown quote, a shipper's columns), the prefix goes; glued to a progress bar, it stays.
EMBEDDED_RECORD = re.compile(
    rf"(?:\({PROCESS_ID}(?:, ip=[^)]*)?\) )?"
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d(?::\d\d(?:\.\d+)?)? \[?[\w.\-/]+\.py:\d+\]"
)
# A head before a vLLM record longer than this is no prefix (stern's pod and container, a gutter) but
# a message a paste glued before the record: it is kept, not cut.
MAX_UNNAMED_PREFIX = 160
# A line that begins with its own envelope already (a process tag, its "(" sometimes cut off as
# pasted, a rank tag, a level).
ENVELOPE_START = re.compile(
    r"\(|\[rank|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    rf"|{PROCESS_ID}"
)


def clean(raw: str, prefix: re.Pattern[str] | None = None) -> str:
    """Remove colour codes, NULs, byte-order marks, shipper and terminal wrappers, and a prefix
    learned from the log's head (ingest.prefixes); keep vLLM's text."""
    text = unwrapped(raw)
    if prefix is not None and (learned := prefix.match(text)):
        text = strip_wrappers(text[learned.end() :])
    if (
        ".py:" in text  # a substring test first spares the regexes on most lines, which hold no source
        and not ENVELOPE_START.match(text.lstrip())
        and (record := EMBEDDED_RECORD.search(text, 1))
        and text[record.start() - 1].isspace()
        and record.start() <= MAX_UNNAMED_PREFIX
    ):
        text = text[record.start() :]
    if RAY_NOTE in text:  # Ray's deduplication note ends the line
        repeated = RAY_REPEATED.search(text)
        text = text[: repeated.start()].rstrip() if repeated else text
    return text


def unwrapped(raw: str) -> str:
    """The line without colour codes, NULs, byte-order marks and the wrappers WRAPPERS names."""
    # CUT_FROM_INSIDE names what this line cuts from inside a line: keep the two in step.
    text = strip_wrappers(ANSI.sub("", raw.replace("\x00", "").replace("\ufeff", "")))
    # A CRLF line copied from a viewer that shows the CR in caret notation (cat -v, vim, less): "...^M".
    return text.removesuffix(CARET_CR)


def glued_records(text: str) -> list[str]:
    """A cleaned line's records: itself, or several where a paste lost the breaks between vLLM's
    records (each then begins with its envelope, after a space)."""
    first = text.find(".py:")
    if first < 0 or (text.find(".py:", first + 1) < 0 and ENVELOPE_START.match(text)):
        return [text]  # at most one envelope's "file.py:line": one record
    # A line that does not begin with a record begins with a message a paste glued before them (clean
    # cut a short prefix already): it is kept as a segment of its own.
    starts = [0] + [m.start() for m in EMBEDDED_RECORD.finditer(text, 1) if text[m.start() - 1].isspace()]
    # The spaces between records go; the line's own last ones stay, as a record alone keeps them (a
    # terminal's wrap may have cut the line at a space that the next row's word follows).
    ends = [*starts[1:], len(text)]
    segments = [text[a:b] if b == len(text) else text[a:b].rstrip() for a, b in zip(starts, ends, strict=True)]
    return [segment for segment in segments if segment.strip()] or [text]


def strip_wrappers(text: str) -> str:
    """Peel wrappers from the outside in until vLLM's own text is left."""
    for _ in range(MAX_WRAPPERS):
        inner = _strip_outer(text)
        if inner is None:
            break
        text = inner
    return text


def _strip_outer(text: str) -> str | None:
    if text.lstrip().startswith(BOX_BAR):
        return _unbox(text)
    for wrapper in WRAPPERS.values():
        match = wrapper.match(text)
        if match:
            return text[match.end() :]
    return None


def _unbox(text: str) -> str:
    # One space pads the bar; more is the line's own indentation (a traceback's "  File").
    inner = text.lstrip()[len(BOX_BAR) :]
    inner = (inner[1:] if inner.startswith(" ") else inner).rstrip()
    return inner.removesuffix(BOX_BAR).rstrip()


def journal_message(text: str) -> str | None:
    """The text a physical line carries: MESSAGE of a `journalctl -o json` record, else the line.

    journald writes MESSAGE as a string, as a list of byte values when it is not printable
    UTF-8 (colour codes, CR), or as null when it is too large: then the line says nothing.
    """
    candidate = text.lstrip(RECORD_SEPARATOR).strip()
    if not (candidate.startswith("{") and candidate.endswith("}") and '"MESSAGE"' in candidate):
        return text
    try:
        record = json.loads(candidate)
    except (ValueError, RecursionError):
        return text
    if not isinstance(record, dict) or "MESSAGE" not in record:
        return text
    message = record["MESSAGE"]
    if isinstance(message, str):
        return message
    if isinstance(message, list):
        try:
            return bytes(message).decode("utf-8", errors="replace")
        except (TypeError, ValueError):  # not a list of byte values: nothing we can read
            return None
    return None
