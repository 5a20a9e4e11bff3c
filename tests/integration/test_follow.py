"""`vllm-advisor follow`: findings as they happen from stdin or a file that is rotated and truncated."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time

from conftest import fixture_path

from advisor.stream.engine import StreamEngine
from advisor.stream.follow import file_chunks, follow

ADVISOR = [sys.executable, "-c", "import sys; from advisor.cli import main; sys.exit(main())"]


class Collected(io.StringIO):
    """The follow output, polled by the test while the follower runs in a thread."""

    def rules(self) -> list[str]:
        return [json.loads(line)["rule"] for line in self.getvalue().splitlines()]

    def wait_for(self, rule: str, count: int = 1, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.rules().count(rule) >= count:
                return True
            time.sleep(0.05)
        return False


def start_following(path, stop: threading.Event, from_start: bool = True) -> tuple[Collected, threading.Thread]:
    out = Collected()
    thread = threading.Thread(
        target=follow, args=(file_chunks(str(path), from_start, stop), StreamEngine(str(path)), out, "ndjson")
    )
    thread.start()
    return out, thread


def append(path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def test_stdin_ndjson_one_object_per_finding_and_exit_code():
    log = fixture_path("088").read_bytes()
    done = subprocess.run([*ADVISOR, "follow"], input=log, capture_output=True, timeout=60)
    records = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [(r["event"], r["rule"], r["line"], r["run"]) for r in records] == [("finding", "S101", 89, 0)]
    assert records[0]["schema"] == "vllm-advisor.finding/1" and records[0]["remediations"]
    assert done.returncode == 1


def test_text_format_is_one_line_per_finding():
    out = io.StringIO()
    follow(io.BytesIO(fixture_path("088").read_bytes()).readlines(), StreamEngine("088"), out, "text")
    assert out.getvalue().startswith("ERROR S101 kv-cache-insufficient [088 run 0 line 89] One request")
    assert len(out.getvalue().splitlines()) == 1


def test_file_followed_across_rotation_and_truncation(tmp_path):
    log, stop = tmp_path / "vllm.log", threading.Event()
    failing = fixture_path("088").read_bytes()
    out, thread = start_following(log, stop)  # the file does not exist yet, like tail -F
    try:
        half = failing.index(b"\n", len(failing) // 2) + 1
        append(log, failing[:half])
        time.sleep(0.5)
        assert "S101" not in out.rules()
        append(log, failing[half:])
        assert out.wait_for("S101"), out.getvalue()
        os.rename(log, tmp_path / "vllm.log.1")  # rotation: a new file under the same name
        append(log, failing)
        assert out.wait_for("S101", 2), out.getvalue()
        os.truncate(log, 0)  # copytruncate: the same file, emptied
        time.sleep(0.5)
        append(log, failing)
        assert out.wait_for("S101", 3), out.getvalue()
    finally:
        stop.set()
        thread.join(10)
    runs = [json.loads(line)["run"] for line in out.getvalue().splitlines()]
    assert runs == [0, 1, 2]  # each launch is a run of its own: reported again, never twice in one


def test_quiet_input_gets_the_fallback_without_waiting_for_the_end(tmp_path):
    # 030 ends inside a traceback: only the whole-run judgement (S299 on the cut traceback) explains it.
    log, stop = tmp_path / "vllm.log", threading.Event()
    append(log, fixture_path("030").read_bytes())
    out, thread = start_following(log, stop)
    try:
        assert out.wait_for("S299", timeout=5), out.getvalue()
    finally:
        stop.set()
        thread.join(10)


def test_from_end_reads_a_file_created_later_from_its_start(tmp_path):
    # --from-end skips what the file held when follow started; a file that did not exist yet held nothing.
    log, stop = tmp_path / "vllm.log", threading.Event()
    out, thread = start_following(log, stop, from_start=False)
    try:
        time.sleep(0.5)
        append(log, fixture_path("088").read_bytes())
        assert out.wait_for("S101"), out.getvalue()
    finally:
        stop.set()
        thread.join(10)
    assert [json.loads(line)["line"] for line in out.getvalue().splitlines()] == [89]


def test_truncated_and_refilled_past_the_read_point_restarts_at_zero(tmp_path):
    # copytruncate, and the writer goes on at once with more than had been read: the size never looks
    # smaller, only the bytes where reading stopped tell the file was emptied.
    log = tmp_path / "vllm.log"
    lines = io.BytesIO(fixture_path("088").read_bytes()).readlines()
    before, after = b"".join(lines[:20]), b"".join(lines[20:60])
    assert len(after) > len(before)
    append(log, before)
    chunks = file_chunks(str(log), True, threading.Event())
    assert next(chunks) == before
    os.truncate(log, 0)
    append(log, after)
    assert next(chunks) == after
