"""The front door: a short README whose first code lines are the two commands, a site whose generated
pages are the rule files', and examples that are the tool's real output."""

from __future__ import annotations

import re

from conftest import ROOT, tool_module

from advisor import analyze, compare, pipeline
from advisor.report.about import SITE
from advisor.report.formats import text

DOCS = ROOT / "docs"
BUNDLED = "fixtures/corpus/088-live-v0320-cpu-kv-too-small-32k.log"


def test_readme_is_short_and_opens_with_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    first_block = readme.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert first_block[0].endswith(f".venv/bin/vllm-advisor --format text {BUNDLED}")
    assert first_block[1] == "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest"


def test_the_shown_example_is_the_tool_s_output_on_the_bundled_log():
    report = text.render([analyze(ROOT / BUNDLED, name=BUNDLED)], width=80)
    for page in (ROOT / "README.md", DOCS / "index.md"):
        assert f"$ vllm-advisor --format text {BUNDLED}\n{report}```" in page.read_text(), page.name


def test_rule_pages_and_guide_are_the_rule_files():
    written = tool_module("tools/rule_pages.py").pages()
    assert len(written) > 30
    for path, content in written.items():
        assert path.read_text() == content, f"stale {path.relative_to(ROOT)}: run python tools/rule_pages.py"
    on_disk = {path for path in (DOCS / "rules").glob("*.md") if path.name != "index.md"}
    assert on_disk == {path for path in written if path.parent.name == "rules"}, "a page of no rule"


def test_site_nav_lists_every_page_and_its_address_is_the_one_reports_link_to():
    config = (ROOT / "mkdocs.yml").read_text()
    assert re.search(r"^site_url: (\S+)$", config, re.M).group(1) == SITE
    listed = set(re.findall(r"^\s+- (?:[^:\n]+: )?(\S+\.md)$", config, re.M))
    pages = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    # A rule's page is reached from the rule index's table, so a new rule needs no line here.
    assert listed == {page for page in pages if not re.fullmatch(r"rules/[A-Z]\d+\.md", page)}
    index = (DOCS / "rules" / "index.md").read_text()
    assert all(f"]({page.removeprefix('rules/')})" in index for page in pages - listed), "a rule page not in the index"


def test_the_formats_page_is_the_tool_s_output():
    examples = tool_module("tools/format_examples.py")
    assert examples.PAGE.read_text() == examples.page(), "stale: run python tools/format_examples.py"


def test_the_compare_page_shows_the_tool_s_output():
    # Three real runs of one vLLM 0.26.0 server, as the page names them (relative to the repository).
    shown = ("099-live-v0260-cpu-kv-shortfall", "100-live-v0260-cpu-healthy", "106-live-v0260-cpu-healthy-cache-full")
    paths = [f"fixtures/corpus/{name}.log" for name in shown]
    rows = compare.compare([pipeline.analysis(ROOT / path, name=path) for path in paths], [])
    assert (
        f"$ vllm-advisor compare {' '.join(paths)}\n{compare.render(rows, 'text')}```"
        in (DOCS / "compare.md").read_text()
    )
