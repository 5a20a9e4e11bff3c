"""Sources: read bytes (file, stdin, .gz), decode, and unwrap each line to the text vLLM printed."""
from __future__ import annotations

import gzip
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# A line longer than this is cut: a 200 MB "line" is binary junk, not a message.
MAX_LINE = 64 * 1024
READ_CHUNK = 1 << 20

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\^\[\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]")
# Wrappers that shippers and terminals put in front of vLLM's own line, tried in order, each once.
WRAPPERS = [
    # journalctl short / short-precise / short-iso: "Nov 29 09:50:01 host vllm[1234]: "
    re.compile(r"^(?:[A-Z][a-zé.]{2,4}\.? {1,2}\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)?|"
               r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:?\d\d|Z)?) \S+ [\w.\-@/]+(?:\[\d+\])?: "),
    # TorchServe "2024-09-13T22:25:38,258 [INFO ] W-9000-model_1.0-stdout MODEL_LOG - "
    re.compile(r"^\S+ \[\w+ ?\] W-\d+-\S+ MODEL_LOG - "),
    # kubectl logs --timestamps (RFC 3339), CI runners "[2026-02-24T20:21:58Z] "
    re.compile(r"^\[?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]? "),
    # kubectl logs --prefix "[pod/name/container] "
    re.compile(r"^\[pod/[^\]\s]+\] "),
    # docker compose "vllm-1  | " (the service name is padded to a common width)
    re.compile(r"^[\w.\-]+ +\| "),
]
# k9s and other TUIs frame each line in box-drawing bars. Only the opening bar is a regex: the
# former r"^\s*│ ?(.*?)\s*│?\s*$" backtracked cubically (2000 spaces after a bar took 20 s).
BOX_START = re.compile(r"\s*│ ?")
# (?<!\s): start only where a run of spaces starts, or the search is quadratic in a run of spaces.
RAY_REPEATED = re.compile(r"(?<!\s)\s*\[repeated \d+x across cluster\]\s*$")


@dataclass(frozen=True, slots=True)
class Line:
    """One physical line of the input: its 1-based number and the unwrapped text."""

    number: int
    text: str


def clean(raw: str) -> str:
    """Remove colour codes, NULs, shipper and terminal wrappers; keep vLLM's own text."""
    text = ANSI.sub("", raw.replace("\x00", ""))
    if "│" in text:
        text = _unbox(text)
    for wrapper in WRAPPERS:
        text = wrapper.sub("", text, count=1)
    return RAY_REPEATED.sub("", text)


def _unbox(text: str) -> str:
    """The text inside a TUI frame: after the opening bar, before the closing bar and padding."""
    start = BOX_START.match(text)
    if start is None:
        return text
    inside = text[start.end():].rstrip()
    return inside[:-1].rstrip() if inside.endswith("│") else inside


def lines(chunks: Iterable[bytes]) -> Iterator[Line]:
    """Split byte chunks on LF into numbered, decoded, cleaned lines.

    A lone CR (a progress bar redrawn in place) separates segments of one physical line:
    each segment is yielded with that line's number, so nothing printed is lost.
    """
    number, pending = 0, b""
    for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for raw in complete:
            number += 1
            yield from _segments(number, raw)
        if len(pending) > MAX_LINE:  # never buffer an endless line
            pending = pending[:MAX_LINE]
    if pending:
        yield from _segments(number + 1, pending)


def _segments(number: int, raw: bytes) -> Iterator[Line]:
    text = raw[:MAX_LINE].decode("utf-8", errors="replace").rstrip("\r")
    for segment in text.split("\r") if "\r" in text else (text,):
        yield Line(number, clean(segment))


def read_chunks(path: str) -> Iterator[bytes]:
    """The bytes of a file (gunzipped when it is gzip), or of stdin for '-'."""
    stream = sys.stdin.buffer if path == "-" else open(path, "rb")
    try:
        head = stream.peek(2)[:2] if hasattr(stream, "peek") else b""
        if head == b"\x1f\x8b":
            stream = gzip.GzipFile(fileobj=stream)
        while chunk := stream.read(READ_CHUNK):
            yield chunk
    finally:
        if path != "-":
            stream.close()


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else str(Path(path))


def text_lines(text: str) -> Iterator[Line]:
    """Lines of an in-memory string (tests, the streaming engine)."""
    return lines([text.encode("utf-8", errors="surrogateescape")])

