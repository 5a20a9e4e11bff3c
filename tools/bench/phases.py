"""Where the advisor's time goes: one run sampled by py-spy (every process, forks included), each sample
given the phase of its innermost frame that names one."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

RATE = 250  # samples a second, per process
# The phases, by what the innermost frame that names one says (a module, or a module and function);
# the first whose pattern a frame matches, innermost frame first, takes the sample.
PHASES = [
    ("start-up and imports", r"<frozen importlib\._bootstrap>|\(advisor/parse/parsers\.py|\(lark/"),
    ("prefilter scan", r"\(advisor/fast/prefilter\.py"),
    ("line numbering", r"^scan_buffer \(advisor/fast/candidates\.py"),
    ("reading", r"^(read|_read|read_chunks) \(advisor/(fast/scan|ingest/sources)\.py"),
    ("parsing candidates", r"\(advisor/(fast/(candidates|templates|tree_cache)|parse/|ingest/)"),
    ("taking in the parts' facts", r"\(multiprocessing/|^_moved_down|^result \(advisor/fast/background"),
    ("grouping runs, placing facts", r"\(advisor/timeline/"),
    ("matching rules", r"\(advisor/rules/"),
    ("writing the report", r"\(advisor/report/(writer|formats/)"),
    ("building the report", r"\(advisor/report/"),
]
COMPILED = [(name, re.compile(pattern)) for name, pattern in PHASES]
SAMPLE = re.compile(r"^(process \d+:\"[^\"]*\";)+(?P<stack>.*) (?P<count>\d+)$")


def profile(argv: list[str]) -> dict[str, Counter[str]]:
    """Run argv under py-spy; the seconds of CPU each phase took, by the role of the process that spent it."""
    spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if spy is None:
        raise SystemExit("py-spy is not installed: pip install py-spy")
    with tempfile.NamedTemporaryFile(suffix=".txt") as out:
        options = ["--nonblocking", "--format", "raw", "--subprocesses", "--rate", str(RATE), "-o", out.name]
        command = [spy, "record", *options, "--"]
        subprocess.run([*command, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        return breakdown(Path(out.name).read_text(encoding="utf-8"))


def breakdown(raw: str) -> dict[str, Counter[str]]:
    """py-spy's raw stacks ("process P:cmd;[process C:cmd;]frame;...;frame COUNT") as seconds by role and phase."""
    seconds: dict[str, Counter[str]] = {}
    for line in raw.splitlines():
        found = SAMPLE.match(line)
        if found is None:
            continue
        frames = found["stack"].split(";")
        role = _role(line, frames)
        seconds.setdefault(role, Counter())[_phase(frames)] += int(found["count"]) / RATE
    return seconds


def _role(line: str, frames: list[str]) -> str:
    if line.count("process ") == 1:
        return "main process"
    return "forked: scans a part" if any(f.startswith("_scan_part ") for f in frames) else "forked: writes events"


def _phase(frames: list[str]) -> str:
    for frame in reversed(frames):  # innermost first
        for name, pattern in COMPILED:
            if pattern.search(frame):
                return name
    return "other"


def table(seconds: dict[str, Counter[str]]) -> str:
    """One row per phase: CPU seconds in each kind of process."""
    roles = sorted(seconds, key=lambda role: role != "main process")
    names = [name for name, _ in PHASES] + ["other"]
    shown = [name for name in names if any(seconds[role][name] for role in roles)]
    lines = [f"{'phase':<30}" + "".join(f"{role:>24}" for role in roles)]
    lines += [f"{name:<30}" + "".join(f"{seconds[role][name]:>24.2f}" for role in roles) for name in shown]
    lines.append(f"{'all (CPU seconds)':<30}" + "".join(f"{sum(seconds[role].values()):>24.2f}" for role in roles))
    return "\n".join(lines)
