"""Time the advisor against grep, ripgrep and wc on the same generated log; print one table per size.

    python tools/bench/run.py --size 200M --size 1G --repeat 3            print the tables
    python tools/bench/run.py ... --phases                                 and where the advisor's time goes (py-spy)
    python tools/bench/run.py ... --phases --write docs/speed.md           and put the report in the page

The report opens with the machine, its load and the tools' versions, and a 1 KB log's time (the
start-up a pre-commit hook pays). --write replaces the page's text between its two markers.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import phases
from generate_log import generate, parse_size

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
KEYWORDS = HERE / "keywords.txt"
FOLLOW = "vllm-advisor follow - < log"
SMALL_LOG = next((ROOT / "fixtures" / "corpus").glob("001-*.log"))  # 1 KB, a real start-up failure
SMALL_RUNS = 20
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def advisor() -> str:
    return shutil.which("vllm-advisor") or str(Path(sys.executable).parent / "vllm-advisor")


def tools(log: Path) -> list[tuple[str, list[str]]]:
    """The commands to time, as argument lists (no shell); tools that are not installed are left out."""
    candidates = [
        ("grep -c -F -f keywords.txt", ["grep", "-c", "-F", "-f", str(KEYWORDS), str(log)]),
        ("rg -c -F -f keywords.txt", ["rg", "-c", "-F", "-f", str(KEYWORDS), str(log)]),
        ("wc -l", ["wc", "-l", str(log)]),
        ("vllm-advisor --format json", [advisor(), "--format", "json", str(log)]),
        # The streaming mode, fed the log on stdin as a shipper would: its rate is in lines/s.
        (FOLLOW, [advisor(), "follow", "--format", "ndjson", "-"]),
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
    size_mb, count = log.stat().st_size / 1e6, line_count(log)
    rows = []
    for name, argv in tools(log):
        runs = [measure(argv, log if name == FOLLOW else None) for _ in range(repeat)]
        seconds = min(s for s, _ in runs)  # the least disturbed run: other processes share the cores
        rows.append((name, seconds, max(r for _, r in runs)))
    grep_seconds = rows[0][1]
    lines = [
        f"{log.name}: {size_mb:,.0f} MB, {count:,} lines, best of {repeat}",
        f"{'tool':<28} {'seconds':>8} {'MB/s':>8} {'ratio to grep':>14} {'peak RSS MB':>12}",
    ]
    for name, seconds, rss in rows:
        lines.append(
            f"{name:<28} {seconds:>8.2f} {size_mb / seconds:>8.0f} {seconds / grep_seconds:>14.2f} {rss:>12.0f}"
        )
        if name == FOLLOW:
            lines.append(f"streaming (follow): {count / seconds:,.0f} lines/s")
    return "\n".join(lines)


def small_log() -> str:
    """A 1 KB log's wall time: the mean and the best of SMALL_RUNS runs."""
    argv = [advisor(), "--format", "json", str(SMALL_LOG)]
    measure(argv)  # the parser tables and the validated rules are cached by the first run, as a user's are
    runs = [measure(argv)[0] for _ in range(SMALL_RUNS)]
    return (
        f"1 KB log ({SMALL_LOG.name[:3]}, {SMALL_LOG.stat().st_size:,} bytes), vllm-advisor --format json, "
        f"{SMALL_RUNS} runs: mean {sum(runs) / len(runs):.3f} s, best {min(runs):.3f} s"
    )


def line_count(log: Path) -> int:
    with log.open("rb") as stream:
        return sum(block.count(b"\n") for block in iter(lambda: stream.read(1 << 24), b""))


def machine() -> str:
    """The date, the commit, the machine, its load and the tools' versions."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    versions = [f"Python {platform.python_version()}"]
    for tool in ("grep", "rg", "py-spy"):
        if shutil.which(tool):
            first = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout.splitlines()
            versions.append(first[0] if first else tool)
    try:
        versions.append(f"hyperscan {version('hyperscan')}")
    except PackageNotFoundError:
        versions.append("no hyperscan (the portable matcher runs)")
    return "\n".join(
        [
            f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, commit {commit.stdout.strip() or 'unknown'}",
            f"{os.cpu_count()} cores ({_cpu()}), {_memory_gib():.0f} GiB; load average {_load()}",
            ", ".join(versions),
        ]
    )


def _cpu() -> str:
    lines = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), platform.machine())


def _memory_gib() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def write(page: Path, report: str) -> None:
    """Replace the page's text between the markers with the report, in a code block."""
    text = page.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{page}: no {BEGIN} ... {END} markers")
    block = f"{BEGIN}\n```\n{report}\n```\n{END}"
    page.write_text(re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S), "utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=parse_size, action="append", help="e.g. 100M, 1G, 4G (repeatable)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per tool; the fastest counts")
    parser.add_argument("--phases", action="store_true", help="and where the advisor's time goes (needs py-spy)")
    parser.add_argument("--write", type=Path, help="put the report between the page's bench markers")
    parser.add_argument("--keep", action="store_true", help="keep the generated logs")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="vllm-advisor-bench-"))
    sections = [machine(), small_log()]
    print("\n\n".join(sections), flush=True)
    try:
        for size in args.size or [parse_size("100M")]:
            log = generate(workdir / f"vllm-{size >> 20}M.log", size)
            section = table(log, args.repeat)
            if args.phases:
                seconds = phases.profile([advisor(), "--format", "json", str(log)])
                section += f"\nwhere vllm-advisor --format json spends CPU (py-spy, one run):\n{phases.table(seconds)}"
            print("\n" + section, flush=True)
            sections.append(section)
            if not args.keep:
                log.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    sections.append(f"load average at the end {_load()}")
    print("\n" + sections[-1])
    if args.write:
        write(args.write, "\n\n".join(sections))


if __name__ == "__main__":
    main()
