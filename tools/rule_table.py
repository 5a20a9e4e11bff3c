"""Write the rule index's table (docs/rules/index.md) from the rule files: `python tools/rule_table.py`."""

from __future__ import annotations

from pathlib import Path

from advisor.rules.schema import load_metric_rules, load_rules

PAGE = Path(__file__).resolve().parent.parent / "docs" / "rules" / "index.md"
HEADER = "| code | name | phase | severity | failure | evidence |"


def table() -> str:
    rows = [HEADER, "| --- | --- | --- | --- | --- | --- |"]
    shown = [(rule, rule.evidence) for rule in load_rules()] + [(rule, "metrics") for rule in load_metric_rules()]
    rows += [
        f"| [{r.code}]({r.code}.md) | {r.name} | {r.phase} | {r.severity} | `{r.failure}` | {evidence} |"
        for r, evidence in shown
    ]
    return "\n".join(rows) + "\n"


def with_table(page: str) -> str:
    """The page with its rule table written anew."""
    return replaced_table(page, HEADER, table())


def replaced_table(page: str, header: str, table: str) -> str:
    """The page with the table that starts at `header` (its lines up to a blank one or the end) replaced."""
    start = page.index(header)
    end = page.find("\n\n", start) + 1 or len(page)
    return page[:start] + table + page[end:]


if __name__ == "__main__":
    PAGE.write_text(with_table(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
