"""Time the advisor against grep, ripgrep and wc on the same generated log; print one table."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from generate_log import generate, parse_size

HERE = Path(__file__).resolve().parent
KEYWORDS = HERE / "keywords.txt"
FOLLOW = "vllm-advisor follow - < log"


def tools(log: Path) -> list[tuple[str, list[str]]]:
    """The commands to time, as argument lists (no shell); tools that are not installed are left out."""
    advisor = shutil.which("vllm-advisor") or str(Path(sys.executable).parent / "vllm-advisor")
    candidates = [
        ("grep -c -F -f keywords.txt", ["grep", "-c", "-F", "-f", str(KEYWORDS), str(log)]),
        ("rg -c -F -f keywords.txt", ["rg", "-c", "-F", "-f", str(KEYWORDS), str(log)]),
        ("wc -l", ["wc", "-l", str(log)]),
        ("vllm-advisor --format json", [advisor, "--format", "json", str(log)]),
        # The streaming mode, fed the log on stdin as a shipper would: its rate is in lines/s.
        (FOLLOW, [advisor, "follow", "--format", "ndjson", "-"]),
    ]
    return [(name, argv) for name, argv in candidates if shutil.which(argv[0]) or Path(argv[0]).exists()]


def measure(argv: list[str], stdin: Path | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS in MB of one run; output goes to a temp file.

    Not /dev/null: GNU grep notices it and stops at the first match.

    /usr/bin/time reports the peak RSS of the tool alone; without it, wait4's figure may
    include the pages of this Python process that the child had before exec.
    """
    gnu_time = Path("/usr/bin/time")
    with (
        tempfile.NamedTemporaryFile("r", encoding="utf-8") as rss_file,
        tempfile.TemporaryFile() as sink,
        stdin.open("rb") if stdin else open(os.devnull, "rb") as source,
    ):
        prefix = [str(gnu_time), "-f", "%M", "-o", rss_file.name] if gnu_time.exists() else []
        start = time.perf_counter()
        process = subprocess.Popen(prefix + argv, stdin=source, stdout=sink)
        _, _, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        kib = int(rss_file.read().split()[-1]) if prefix else usage.ru_maxrss  # both in KiB on Linux
    return seconds, kib / 1024


def settle(log: Path) -> None:
    """Flush the freshly written log to disk and read it once, so every tool finds it in the page
    cache and none pays for the generator's write-back."""
    os.sync()
    with log.open("rb") as stream:
        while stream.read(1 << 24):
            pass


def table(log: Path, repeat: int) -> str:
    settle(log)
    size_mb = log.stat().st_size / 1e6
    rows = []
    for name, argv in tools(log):
        runs = [measure(argv, log if name == FOLLOW else None) for _ in range(repeat)]
        seconds = min(s for s, _ in runs)  # the least disturbed run: other processes share the cores
        rows.append((name, seconds, max(r for _, r in runs)))
    grep_seconds = rows[0][1]
    lines = [
        f"{log.name}: {size_mb:,.0f} MB, best of {repeat}",
        f"{'tool':<28} {'seconds':>8} {'MB/s':>8} {'ratio to grep':>14} {'peak RSS MB':>12}",
    ]
    for name, seconds, rss in rows:
        lines.append(
            f"{name:<28} {seconds:>8.2f} {size_mb / seconds:>8.0f} {seconds / grep_seconds:>14.2f} {rss:>12.0f}"
        )
        if name == FOLLOW:
            follow_rate = line_count(log) / seconds
    if FOLLOW in [name for name, _, _ in rows]:
        lines.append(f"streaming (follow): {follow_rate:,.0f} lines/s")
    return "\n".join(lines)


def line_count(log: Path) -> int:
    with log.open("rb") as stream:
        return sum(block.count(b"\n") for block in iter(lambda: stream.read(1 << 24), b""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=parse_size, action="append", help="e.g. 100M, 1G, 4G (repeatable)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per tool; the fastest counts")
    parser.add_argument("--keep", action="store_true", help="keep the generated logs")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="vllm-advisor-bench-"))
    try:
        for size in args.size or [parse_size("100M")]:
            log = generate(workdir / f"vllm-{size >> 20}M.log", size)
            print(table(log, args.repeat), flush=True)
            if not args.keep:
                log.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
