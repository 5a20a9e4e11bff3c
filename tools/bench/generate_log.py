"""Generate a realistic vLLM runtime log of a given size from the real corpus fixtures."""

from __future__ import annotations

import argparse
import random
import re
import tempfile
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"
HEALTHY = next(CORPUS.glob("091-*.log"))  # a real v0.32 server: startup, then traffic and stats
FAILING = next(CORPUS.glob("089-*.log"))  # the same server dying: EngineDeadError after traffic
STARTUP_END = "Application startup complete"
ACCESS_PER_SECOND = 50
STATS_EVERY = 10  # seconds, per engine, as V1's LoggingStatLogger does
ENGINES = 2
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """'100M' -> bytes; a plain number is bytes."""
    match = re.fullmatch(r"(\d+)([KMG]?)B?", text.strip().upper())
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 100M, 1G)")
    return int(match[1]) * UNITS.get(match[2], 1)


def startup_block(path: Path) -> list[str]:
    """The lines of a fixture up to and including the 'Application startup complete' line."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if STARTUP_END in line)
    return lines[: end + 1]


def failure_block(path: Path) -> list[str]:
    """What the failing fixture printed after its startup: the engine death and the shutdown."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if STARTUP_END in line)
    return lines[end + 1 :]


def clock(second: int) -> str:
    minutes, seconds = divmod(second, 60)
    hours, minutes = divmod(minutes, 60)
    day, hours = divmod(hours, 24)
    return f"11-{(day % 28) + 1:02d} {hours:02d}:{minutes:02d}:{seconds:02d}"


def simulated_second(second: int, rng: random.Random, load: list[float]) -> list[str]:
    """One second of traffic: access lines, request lines, and the stats lines due this second."""
    stamp = clock(second)
    out = []
    for _ in range(ACCESS_PER_SECOND):
        port = rng.randrange(30000, 65000)
        out.append(f'INFO:     127.0.0.1:{port} - "POST /v1/completions HTTP/1.1" 200 OK\n')
        if rng.random() < 0.2:
            request = f"cmpl-{rng.getrandbits(64):016x}-0"
            out.append(
                f"(APIServer pid=12646) INFO {stamp} [logger.py:41] Received request {request}: "
                f"prompt_token_ids: [{rng.randrange(1, 32000)}, {rng.randrange(1, 32000)}], "
                f"max_tokens={rng.choice((64, 128, 256))}\n"
            )
    if second % STATS_EVERY == 0:
        for engine in range(ENGINES):
            # Values drift like a real server's: a random walk of the KV cache usage.
            load[engine] = min(99.9, max(0.0, load[engine] + rng.uniform(-8, 8)))
            out.append(
                f"(APIServer pid=12646) INFO {stamp} [loggers.py:335] Engine {engine:03d}: "
                f"Avg prompt throughput: {rng.uniform(0, 900):.1f} tokens/s, "
                f"Avg generation throughput: {rng.uniform(0, 1500):.1f} tokens/s, "
                f"Running: {rng.randrange(0, 9)} reqs, Waiting: {rng.randrange(0, 8)} reqs, "
                f"CPU KV cache usage: {load[engine]:.1f}%, Prefix cache hit rate: {rng.uniform(0, 60):.1f}%\n"
            )
    return out


def generate(path: Path, size: int, seed: int = 6) -> Path:
    """Write about `size` bytes: startup, traffic, then the real failure near the end."""
    rng = random.Random(seed)
    tail = "".join(failure_block(FAILING)).encode()
    load = [50.0] * ENGINES
    with path.open("wb", buffering=1 << 20) as out:
        written = out.write("".join(startup_block(HEALTHY)).encode())
        second = 0
        while written + len(tail) < size:
            written += out.write("".join(simulated_second(second, rng, load)).encode())
            second += 1
        out.write(tail)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=parse_size, default=parse_size("100M"), help="e.g. 100M, 1G, 4G")
    parser.add_argument("--out", type=Path, help="file to write (default: a new file in a temp dir)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="vllm-advisor-bench-")) / f"vllm-{args.size}.log"
    print(generate(out, args.size))


if __name__ == "__main__":
    main()
