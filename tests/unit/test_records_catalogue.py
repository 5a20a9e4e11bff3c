"""Every logger call of every vLLM release (fixtures/wordings/records.json, by tools/wordings/records.py),
printed as vLLM's logger prints it, is recognised as a vLLM record of its source file; every raise
(fixtures/wordings/raises.json), printed as Python prints it uncaught, as an exception of its class."""

from __future__ import annotations

import json

from conftest import FIXTURES, ROOT, tool_module

RECORDS = json.loads((FIXTURES / "wordings" / "records.json").read_text())
RAISES = json.loads((FIXTURES / "wordings" / "raises.json").read_text())
CATALOGUE = json.loads((FIXTURES / "wordings" / "catalogue.json").read_text())


def records_tool():
    return tool_module("tools/wordings/records.py")


def test_every_release_is_read():
    assert min(r["first"] for r in RECORDS if r["first"].startswith("0.1.")) == "0.1.0"
    assert "0.33.0" in {r["last"] for r in RECORDS}
    assert {r["level"] for r in RECORDS} >= {"DEBUG", "INFO", "WARNING", "ERROR"}


def test_every_logger_call_is_recognised_as_a_vllm_record():
    tool = records_tool()
    missed = [(r["file"], r["template"]) for r in RECORDS if not tool.recognised(r)]
    assert missed == []


def test_every_raise_is_read_as_an_exception_of_its_class():
    tool = records_tool()
    assert len(RAISES) > 1000 and {"ValueError", "RuntimeError", "NotImplementedError"} <= {r["raises"] for r in RAISES}
    missed = [(r["file"], r["raises"], r["template"]) for r in RAISES if not tool.raised(r)]
    assert missed == []


def test_printed_records_take_their_release_s_format():
    tool = records_tool()
    old = {"template": "Hello", "style": "", "level": "INFO", "file": "vllm/engine/llm_engine.py", "first": "0.4.0"}
    assert tool.printed({**old, "last": "0.6.0"}) == ["INFO 12-02 10:00:00 llm_engine.py:1] Hello"]
    assert sorted(tool.printed({**old, "last": "0.9.0"})) == [
        "INFO 12-02 10:00:00 [llm_engine.py:1] Hello",
        "INFO 12-02 10:00:00 llm_engine.py:1] Hello",
    ]


def test_readme_table_is_current():
    assert records_tool().table(RECORDS, CATALOGUE, RAISES) in (ROOT / "docs" / "coverage.md").read_text()
