"""Coverage-guided fuzzing of the whole pipeline with atheris.

python tests/robustness/fuzz_advisor.py [-max_total_time=600]
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from helpers.contract import analyze_bytes, check_report

    from advisor.command import CommandError


def one_input(data: bytes) -> None:
    """The first byte picks how the input is split into chunks and whether a --cmd is given."""
    if not data:
        return
    control, body = data[0], data[1:]
    step = 1 + control % 64 * 97
    chunks = [body[i : i + step] for i in range(0, len(body), step)]
    user_command = None
    if control & 0x80:
        # The tail after the last NUL doubles as a user-given command: hostile --cmd values.
        head, _, tail = body.rpartition(b"\x00")
        chunks, user_command = [head], "vllm serve " + tail.decode("utf-8", errors="replace")
    try:
        report, count = analyze_bytes(chunks, user_command)
    except CommandError:
        return  # an unsplittable --cmd is refused as a usage error, by design
    check_report(report, count)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
