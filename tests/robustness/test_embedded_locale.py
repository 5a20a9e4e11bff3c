"""The advisor inside an interpreter that kept the C locale, as syslog-ng's and rsyslog's embedded Pythons do.

The `python` command coerces the C locale to UTF-8 (PEP 538); an embedding host does not, so every file
the package reads for itself (grammar, rules, stage tables) must name its encoding.
"""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT, fixture_path

# A log with non-ASCII bytes (a localized month), read through both doors.
LOG = "057-journalctl-localized-month-healthy-4xv100-awq"
SCRIPT = """
import sys
from pathlib import Path
from advisor import StreamEngine, analyze
path = Path(sys.argv[1])
engine = StreamEngine("embedded")
found = [item.to_json() for line in path.read_bytes().splitlines(keepends=True) for item in engine.feed_raw(line)]
found += [item.to_json() for item in engine.finish()]
sys.stdout.buffer.write((analyze(path).to_json() + "\\n" + "\\n".join(found)).encode("utf-8"))
"""


def run(**env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, str(fixture_path(LOG))],
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, **env},
    )


def test_an_uncoerced_c_locale_reads_and_judges_as_utf_8_does():
    embedded = run(LC_ALL="C", PYTHONCOERCECLOCALE="0", PYTHONUTF8="0")
    assert embedded.returncode == 0, embedded.stderr.decode()
    assert embedded.stdout == run(PYTHONUTF8="1").stdout
