"""A vLLM-like writer for the no-loss tests: appends a real log line by line and rotates its file meanwhile.

Usage: python rotating_writer.py PATH MODE LOG LAUNCHES EVERY. Writes LOG LAUNCHES times (each copy is a
new launch, a new run), and every EVERY lines rotates PATH the way MODE says:
- rename: PATH -> PATH.N; a pause, then a few more lines to the old file (the logger reopens late, as
  after logrotate's rename and a later postrotate signal); then a new PATH;
- remove: the same with PATH unlinked, and absent a while longer before it is created again;
- truncate: copytruncate, the writer paused before the copy (what a copy-then-truncate can keep exact).
Opened in append mode, as logging.FileHandler does, so writes after a truncation go to the new end.
"""

from __future__ import annotations

import os
import shutil
import sys
import time

LATE_LINES = 5  # written to the old file after it was moved or removed
PAUSE = 0.5  # longer than the follower's poll: it reads to the end, then sees the change


def main(path: str, mode: str, log: str, launches: int, every: int) -> None:
    with open(log, "rb") as source:
        lines = source.readlines() * launches
    # A logger's own file: opened, rotated away and reopened by name, as the logger does.
    out, rotations, late = open(path, "ab", buffering=0), 0, 0  # noqa: SIM115
    for number, line in enumerate(lines, 1):
        out.write(line)
        if number % 5 == 0:
            # About 500 lines/s: rotations land while the follower reads, yet each file lives well past
            # the follower's poll. A file created and rotated away between two polls is never seen by any
            # polling follower (nor by tail -F).
            time.sleep(0.01)
        if late and (late := late - 1) == 0:  # the logger notices the rotation and reopens the name
            out.close()
            if mode == "remove":
                time.sleep(PAUSE)
            out = open(path, "ab", buffering=0)  # noqa: SIM115
        if number % every:
            continue
        rotations += 1
        if mode in ("rename", "remove"):
            if mode == "rename":
                os.rename(path, f"{path}.{rotations}")
            else:
                os.unlink(path)
            time.sleep(PAUSE)  # the logger has not noticed: its next lines still go to the old file
            late = LATE_LINES
        else:
            time.sleep(PAUSE)  # lines written between the copy and the truncation would be in the copy only
            shutil.copyfile(path, f"{path}.{rotations}")
            os.truncate(path, 0)  # and the writer goes straight on
    out.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
