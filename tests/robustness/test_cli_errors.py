"""The real command in a subprocess: each bad input or environment gives one line and its exit code, no traceback."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest
from conftest import ROOT, fixture_path, sigint_default

from advisor import cli

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
ADVISOR = [sys.executable, "-m", "advisor"]
WRITE_ONLY_FOR_ROOT = "/proc/sys/vm/compact_memory"


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*ADVISOR, *args], capture_output=True, cwd=ROOT, timeout=120, **kwargs)


def assert_one_line_error(done: subprocess.CompletedProcess, code: int, says: str) -> None:
    stderr = done.stderr.decode()
    assert done.returncode == code, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("vllm-advisor: "), stderr
    assert says in stderr and "Traceback" not in stderr


def assert_report(done: subprocess.CompletedProcess, code: int, failure: str) -> None:
    assert done.returncode == code and done.stderr == b"", done.stderr.decode()
    assert f'"failure": "{failure}"' in done.stdout.decode()


def test_empty_file_is_unknown_and_exit_0(tmp_path):
    (tmp_path / "empty.log").write_bytes(b"")
    assert_report(run(str(tmp_path / "empty.log")), EXIT_OK, "none")


def test_empty_stdin_is_unknown_and_exit_0():
    assert_report(run(stdin=subprocess.DEVNULL), EXIT_OK, "none")


def test_binary_file_is_unknown(tmp_path):
    # A real binary: the Python interpreter itself.
    assert_report(run(os.path.realpath(sys.executable)), EXIT_OK, "none")


def test_invalid_utf8_keeps_the_verdict(tmp_path):
    path = tmp_path / "latin1.log"
    path.write_bytes(b"\xff\xfe\xc3(\x80\n" + fixture_path("088").read_bytes().replace(b"tiny-llama", b"tiny-\xe9\xff"))
    assert_report(run(str(path)), EXIT_FAILURE, "kv_cache_insufficient")


def test_50_mb_line(tmp_path):
    path = tmp_path / "long-line.log"
    with path.open("wb") as out:
        out.write(fixture_path("088").read_bytes())
        out.write(b"x" * 50 * 2**20 + b"\n")
    assert_report(run(str(path)), EXIT_FAILURE, "kv_cache_insufficient")


def test_missing_file():
    assert_one_line_error(run("/nonexistent/vllm.log"), EXIT_USAGE, "/nonexistent/vllm.log: no such file")


def test_empty_directory(tmp_path):
    # A folder is an archive of logs (tests/integration/test_archives.py); an empty one has none.
    assert_one_line_error(run(str(tmp_path)), EXIT_USAGE, "no files in it")


def test_truncated_gzip(tmp_path):
    import gzip

    path = tmp_path / "cut.log.gz"
    path.write_bytes(gzip.compress(fixture_path("088").read_bytes())[:2000])
    assert_one_line_error(run(str(path)), EXIT_USAGE, "cannot read")


def test_unknown_option_is_one_line():
    assert_one_line_error(run("--format", "yaml", "x.log"), EXIT_USAGE, "invalid choice")


@pytest.mark.parametrize("subcommand", ["follow", "schema", "explain", "rules"])
def test_every_subcommands_usage_error_is_one_line(subcommand):
    assert_one_line_error(run(subcommand, "--bogus", "x"), EXIT_USAGE, "")


def test_unsplittable_cmd_is_one_line():
    assert_one_line_error(run("--cmd", "vllm serve 'm", str(fixture_path("088"))), EXIT_USAGE, "--cmd")


def test_permission_denied(tmp_path):
    path = tmp_path / "secret.log"
    shutil.copy(fixture_path("088"), path)
    path.chmod(0)
    if os.geteuid() == 0:
        # root reads a mode-000 file; a write-only sysctl file is refused even to root.
        path = WRITE_ONLY_FOR_ROOT
        if not os.path.exists(path):
            pytest.skip(f"running as root and {path} is missing: nothing root cannot read")
    assert_one_line_error(run(str(path)), EXIT_USAGE, f"{path}: permission denied")


def test_permission_denied_in_process(monkeypatch, capsys):
    # The same code path without a second user: open() refuses.
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("advisor.ingest.sources.open", refuse, raising=False)
    assert cli.main([str(fixture_path("088"))]) == EXIT_USAGE
    assert capsys.readouterr().err == f"vllm-advisor: {fixture_path('088')}: permission denied\n"


def test_disk_full_on_stdout():
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [*ADVISOR, str(fixture_path("088"))], stdout=full, stderr=subprocess.PIPE, cwd=ROOT, timeout=120
        )
    done.stdout = b""
    assert_one_line_error(done, EXIT_USAGE, "cannot write the report: No space left on device")


@pytest.mark.parametrize("subcommand", [["rules"], ["explain", "S101"]], ids=str)
def test_disk_full_on_stdout_of_a_subcommand(subcommand):
    with open("/dev/full", "wb") as full:
        done = subprocess.run([*ADVISOR, *subcommand], stdout=full, stderr=subprocess.PIPE, cwd=ROOT, timeout=120)
    done.stdout = b""
    assert_one_line_error(done, EXIT_USAGE, "cannot write the output: No space left on device")


def test_stdout_closed():
    done = subprocess.run(
        [*ADVISOR, str(fixture_path("088"))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        timeout=120,
        preexec_fn=lambda: os.close(1),
    )
    assert_one_line_error(done, EXIT_USAGE, "standard output is closed")


@pytest.mark.parametrize("reader_leaves", ["before-the-report", "mid-report"])
def test_broken_pipe_is_silent(tmp_path, reader_leaves):
    # `vllm-advisor big.log | head -c 10`: a report far larger than a pipe buffer, a reader that leaves.
    big = tmp_path / "big.log"
    big.write_bytes(fixture_path("088").read_bytes() * 100)
    child = subprocess.Popen(
        [*ADVISOR, "--format", "json", str(big)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
    )
    if reader_leaves == "mid-report":
        assert child.stdout.read(10) == b'{\n  "schem'
        wait_until_blocked(child.pid, "pipe")  # the pipe is full: the writer waits for the reader
    child.stdout.close()
    stderr = child.stderr.read()
    # Exit 0 when the write fails outright; when the kernel accepted part of it, the verdict's code.
    assert child.wait(timeout=120) in (EXIT_OK, EXIT_FAILURE)
    assert stderr == b""


def test_ctrl_c_while_reading_stdin():
    child = subprocess.Popen(
        ADVISOR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=sigint_default,
        cwd=ROOT,
    )
    child.stdin.write(fixture_path("088").read_bytes())
    child.stdin.flush()
    wait_until_blocked(child.pid, "pipe")
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == EXIT_INTERRUPTED, stderr
    assert stderr == b"vllm-advisor: interrupted\n"
    assert stdout == b""


def wait_until_blocked(pid: int, channel: str, timeout: float = 60) -> None:
    """Until the child sleeps on a pipe (imports done; waiting for input, or for a reader of its output)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with (
            open(f"/proc/{pid}/wchan", encoding="utf-8") as wchan,
            open(f"/proc/{pid}/stat", encoding="utf-8") as status,
        ):
            waiting_on = wchan.read()  # "0" where the kernel hides it: then sleeping is all we know
            if (channel in waiting_on or waiting_on == "0") and status.read().split(") ")[1][0] == "S":
                return
        time.sleep(0.05)
    pytest.fail(f"the advisor never waited on a {channel}")


def test_inputs_are_never_modified(tmp_path):
    copies = []
    for name in ("088", "091", "046"):
        copy = tmp_path / fixture_path(name).name
        shutil.copy2(fixture_path(name), copy)
        copy.chmod(stat.S_IRUSR)  # a log is often read-only; the advisor must not need more
        copies.append((copy, copy.read_bytes(), copy.stat()))
    done = run("--format", "json", *[str(c) for c, _, _ in copies])
    assert done.returncode == EXIT_FAILURE
    for copy, content, before in copies:
        after = copy.stat()
        assert copy.read_bytes() == content
        assert (after.st_size, after.st_mtime_ns, after.st_mode, after.st_ino) == (
            before.st_size,
            before.st_mtime_ns,
            before.st_mode,
            before.st_ino,
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(c.name for c, _, _ in copies)


def cached_files(cache_home, pattern: str = "*") -> list:
    return sorted((cache_home / "vllm-advisor").glob(pattern))


def test_parser_tables_and_validated_rules_are_cached_and_reused(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    first = run("--format", "json", str(fixture_path("088")), env=env)
    assert len(cached_files(tmp_path, "*.lark-tables")) == 2  # the envelope and the message grammar
    assert len(cached_files(tmp_path, "rules-*.pickle")) == 2  # the failure vocabulary and the log rules
    kept = cached_files(tmp_path)
    written = [t.stat().st_mtime_ns for t in kept]
    second = run("--format", "json", str(fixture_path("088")), env=env)
    assert cached_files(tmp_path) == kept
    assert [t.stat().st_mtime_ns for t in kept] == written  # loaded, not made again
    assert second.stdout == first.stdout and second.returncode == first.returncode == EXIT_FAILURE


def test_a_broken_or_unwritable_cache_changes_nothing(tmp_path):
    expected = run("--format", "json", str(fixture_path("088")))
    broken = tmp_path / "broken"
    run("--format", "json", str(fixture_path("088")), env={**os.environ, "XDG_CACHE_HOME": str(broken)})
    for kept in cached_files(broken):
        kept.write_bytes(kept.read_bytes()[:200])  # a write cut short by a full disk
    (tmp_path / "a-file").write_text("")
    for home in (broken, tmp_path / "a-file"):  # a cache folder that cannot be made
        done = run("--format", "json", str(fixture_path("088")), env={**os.environ, "XDG_CACHE_HOME": str(home)})
        assert_report(done, EXIT_FAILURE, "kv_cache_insufficient")
        assert done.stdout == expected.stdout
