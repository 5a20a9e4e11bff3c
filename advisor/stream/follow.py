"""vllm-advisor follow [FILE]: like `tail -F`, a growing log read through the engine, findings printed as they come."""

from __future__ import annotations

import argparse
import os
import select
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, BinaryIO, TextIO

from advisor.ingest.sources import READ_CHUNK
from advisor.report.contract import StreamFinding
from advisor.stream import metrics
from advisor.stream.engine import StreamEngine
from advisor.usage import OneLineParser

if TYPE_CHECKING:  # imported where it is used: prometheus_client only when polling
    from advisor.scrape.poll import Poller

POLL_SECONDS = 0.2
# A traceback arrives in one burst; once the input has been quiet this long the run so far is judged whole,
# so a fallback finding ("the engine failed to start") is not held until the log is closed, which may be never.
QUIET_SECONDS = 1.0
# Bytes of the end of what was read, compared with the file before each read: a log line carries a
# timestamp or a counter within this many bytes, so a refilled file differs here.
TRUNCATION_PROBE = 64


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="vllm-advisor follow",
        description="Follow a vLLM log (across rotation and truncation) or stdin; "
        "print each finding once, as soon as it is decidable.",
    )
    p.add_argument("file", nargs="?", default="-", help="the log to follow; '-' or none for stdin")
    p.add_argument(
        "--format",
        choices=("ndjson", "text"),
        default=None,
        help="one JSON object per finding per line, or one human line (default: text on a terminal)",
    )
    start = p.add_mutually_exclusive_group()
    start.add_argument(
        "--from-start",
        dest="from_start",
        action="store_true",
        default=True,
        help="read what the file already holds first, as batch mode would (the default)",
    )
    start.add_argument(
        "--from-end",
        dest="from_start",
        action="store_false",
        help="skip what the file already holds, like tail -F -n 0",
    )
    p.add_argument("--metrics-port", type=int, help="serve Prometheus text format on GET /metrics at this port")
    p.add_argument("--metrics-host", default="127.0.0.1", help="address to serve metrics on (default: loopback)")
    p.add_argument(
        "--metrics-url",
        help="poll this vLLM server's /metrics (http or https) while following; "
        "a finding when preemptions start, a recovery when they stop",
    )
    p.add_argument("--interval", default="15s", help="time between polls of --metrics-url (default 15s)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    fmt = args.format or ("text" if sys.stdout.isatty() else "ndjson")
    counters = metrics.FollowCounters()
    server = metrics.serve(counters, args.metrics_host, args.metrics_port) if args.metrics_port is not None else None
    stop = threading.Event()
    chunks = stdin_chunks(stop) if args.file == "-" else file_chunks(args.file, args.from_start, stop)
    engine = StreamEngine("<stdin>" if args.file == "-" else args.file)
    poller = _poller(args.metrics_url, args.interval, lambda: engine.run_index) if args.metrics_url else None
    try:
        follow(chunks, engine, sys.stdout, fmt, counters, poller.drain if poller else None)
    except KeyboardInterrupt:  # the normal way to stop following a file: report what the last run shows
        emit(engine.finish(), sys.stdout, fmt)
    finally:
        if server is not None:
            server.shutdown()
        if poller is not None:
            poller.stop()
    return 1 if any(v.failure != "none" for v in engine.verdicts.values()) else 0


def _poller(url: str, interval: str, run: Callable[[], int]) -> Poller:
    from advisor.scrape.fetch import shown
    from advisor.scrape.poll import Poller, interval_seconds  # prometheus_client only when polling
    from advisor.usage import InputError

    if not url.lower().startswith(("http://", "https://")):
        raise InputError(f"{shown(url)}: only http and https URLs are polled")
    try:
        seconds = interval_seconds(interval)
    except ValueError:
        raise InputError(f"--interval {interval!r}: give a time such as 15s, 500ms or 2m") from None
    return Poller(url, seconds, run).start()


def follow(
    chunks: Iterable[bytes | None],
    engine: StreamEngine,
    out: TextIO,
    fmt: str,
    counters: metrics.FollowCounters | None = None,
    polled: Callable[[], list[StreamFinding]] | None = None,
) -> None:
    """Feed bytes (None: nothing new yet) to the engine; write each finding as it comes, and what the metrics
    poller found meanwhile; finish at the end."""
    last_data, judged = time.monotonic(), True
    for chunk in chunks:
        if polled is not None:
            emit(polled(), out, fmt)
        if chunk is None:
            if judged or time.monotonic() - last_data < QUIET_SECONDS:
                continue
            reported, judged = engine.flush(), True
        else:
            reported, last_data, judged = engine.feed_bytes(chunk), time.monotonic(), False
        emit(reported, out, fmt)
        if counters is not None:
            counters.record(engine.lines_read, reported, engine.verdicts)
    reported = engine.finish()
    emit(reported, out, fmt)
    if counters is not None:
        counters.record(engine.lines_read, reported, engine.verdicts)


def emit(reported: list[StreamFinding], out: TextIO, fmt: str) -> None:
    for item in reported:
        out.write((item.to_json() if fmt == "ndjson" else item.summary()) + "\n")
    if reported:
        out.flush()  # a shipper downstream must see each finding now, not when a buffer fills


def file_chunks(path: str, from_start: bool, stop: threading.Event) -> Iterator[bytes | None]:
    """Every byte written to a path, in order and once: across rotation, removal and truncation.

    Rotation (rename, or remove, then create) leaves the writer appending to the old file until it
    reopens the name: the old file is read until the new one has data, then drained, then left.
    Truncation in place (copytruncate) restarts at 0: seen as a file shorter than what was read, or,
    when the writer refilled it past that point already, as other bytes where the last ones read were.
    Bytes written between the copy and the truncation are in the copy only.
    """
    skip_existing = not from_start and os.path.exists(path)
    handle, ends_line, last = None, True, b""  # last: the end of what was read from this file
    try:
        while not stop.is_set():
            if handle is None:
                handle = _open(path)
                if handle is None:  # not created yet
                    yield None
                    stop.wait(POLL_SECONDS)
                    continue
                if skip_existing:
                    handle.seek(0, os.SEEK_END)
                    skip_existing = False
                last = b""
            rewritten = bool(last) and os.pread(handle.fileno(), len(last), handle.tell() - len(last)) != last
            chunk = b"" if rewritten else handle.read(READ_CHUNK)
            if chunk:
                ends_line, last = chunk.endswith(b"\n"), chunk[-TRUNCATION_PROBE:]
                yield chunk
                continue
            opened, current = os.fstat(handle.fileno()), _stat(path)
            same = current is not None and (current.st_dev, current.st_ino) == (opened.st_dev, opened.st_ino)
            if rewritten or (same and current is not None and current.st_size < handle.tell()):
                handle.seek(0)  # truncated in place (copytruncate), maybe refilled already
                last = b""
            elif same or current is None or current.st_size == 0:
                yield None
                stop.wait(POLL_SECONDS)
                continue
            else:  # the writer has moved on to the new file: what it wrote to the old one is there by now
                while chunk := handle.read(READ_CHUNK):
                    ends_line = chunk.endswith(b"\n")
                    yield chunk
                handle.close()
                handle = None
            if not ends_line:  # the old content's last line ends here, not in the new file's first
                ends_line = True
                yield b"\n"
    finally:
        if handle is not None:
            handle.close()


def _open(path: str) -> BinaryIO | None:
    try:
        return open(path, "rb")
    except FileNotFoundError:
        return None


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def stdin_chunks(stop: threading.Event) -> Iterator[bytes | None]:
    """Bytes from stdin as they arrive, None while it is quiet, until end of input."""
    fd = sys.stdin.fileno()
    while not stop.is_set():
        ready, _, _ = select.select([fd], [], [], POLL_SECONDS)
        if not ready:
            yield None
            continue
        chunk = os.read(fd, READ_CHUNK)
        if not chunk:
            return
        yield chunk
