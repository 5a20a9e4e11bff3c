"""Write docs/formats.md, each output format on one real log, from the tool's own output:
`python tools/format_examples.py`. A test keeps the page equal to this output.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from advisor import analyze  # noqa: E402  (needs the repo on sys.path first)
from advisor.report.formats import render, text  # noqa: E402

PAGE = ROOT / "docs" / "formats.md"
LOG = "fixtures/corpus/020-free-mem-below-util-kvcached-a100.log"
FENCES = {"text": "text", "json": "json", "ndjson": "json", "markdown": "markdown", "sarif": "json"}


def page() -> str:
    report = analyze(ROOT / LOG, name=LOG)
    lines = [
        "# Each format on one real log",
        "",
        f"The same report in every `--format`, on `{LOG}` (a vLLM start refused because another process",
        "held part of the GPU). Written by `tools/format_examples.py` from the tool's own output; a test",
        "keeps this page current. [Outputs](outputs.md) says what each format is for.",
        "",
    ]
    for name, fence in FENCES.items():
        # Text at 80 columns, as off a terminal, whatever terminal runs this.
        shown = text.render([report], width=80) if name == "text" else render(name, [report])
        if name == "sarif":
            # The driver lists every rule's descriptor; the run's results are what a finding looks like.
            shown = json.dumps(json.loads(shown)["runs"][0]["results"], indent=2, ensure_ascii=False) + "\n"
        lines += [f"## `--format {name}`", ""]
        if name == "sarif":
            lines += ["The run's `results` (its `tool.driver.rules` describe every rule; `helpUri` is its page):", ""]
        lines += [f"```{fence}", shown.rstrip("\n"), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    PAGE.write_text(page(), encoding="utf-8")
