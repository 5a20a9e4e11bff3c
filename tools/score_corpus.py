"""Score the advisor on labelled logs: verdicts right and labelled facts found (docs/accuracy.md's first-sight figure).

    python tools/score_corpus.py fixtures/corpus               # every case
    python tools/score_corpus.py ../shared/corpus 002 004 006  # some cases, e.g. the ones just added

A verdict is right when its phase equals the label and its failure is in the case's `accept`; a fact
is found when its labelled value is among the report's events. Run it on new logs before changing
anything for them, and record the figure in the accuracy table of docs/accuracy.md.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from advisor.ingest import sources
from advisor.report.build import analyze


def main(argv: list[str]) -> int:
    corpus, wanted = Path(argv[0]), set(argv[1:])
    right = cases = facts = found = 0
    for line in (corpus / "cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        if wanted and case["id"] not in wanted:
            continue
        cases += 1
        path = corpus / case["file"]
        path = path if path.exists() else corpus / Path(case["file"]).name  # logs/ in shared, flat here
        report = analyze(sources.lines(sources.read_chunks(str(path))), path.name)
        verdict = (report.verdict.phase, report.verdict.failure)
        good = verdict[0] == case["phase"] and verdict[1] in case["accept"]
        right += good
        missing = []
        for name, value in case["facts"].items():
            facts += 1
            if any(math.isclose(e.values[name], value, rel_tol=1e-9) for e in report.events if name in e.values):
                found += 1
            else:
                missing.append(name)
        if not good or missing:
            print(
                f"{case['id']} {'right' if good else 'WRONG'}: label {case['phase']}/{case['accept']}, "
                f"advisor {verdict[0]}/{verdict[1]}; facts not found: {missing or 'none'}"
            )
    print(f"verdicts {right}/{cases}, facts {found}/{facts}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
