"""Write the README's rule table from the rule files: `python tools/rule_table.py`."""

from __future__ import annotations

from pathlib import Path

from advisor.rules.schema import load_rules

README = Path(__file__).resolve().parent.parent / "README.md"
HEADER = "| code | name | phase | severity | failure | evidence |"


def table() -> str:
    rows = [HEADER, "| --- | --- | --- | --- | --- | --- |"]
    rows += [f"| {r.code} | {r.name} | {r.phase} | {r.severity} | `{r.failure}` | {r.evidence} |" for r in load_rules()]
    return "\n".join(rows) + "\n"


def with_table(readme: str) -> str:
    """The README with its rule table written anew."""
    return replaced_table(readme, HEADER, table())


def replaced_table(readme: str, header: str, table: str) -> str:
    """The README with the table that starts at `header` (its block of lines up to a blank one) replaced."""
    start = readme.index(header)
    end = readme.index("\n\n", start) + 1
    return readme[:start] + table + readme[end:]


if __name__ == "__main__":
    README.write_text(with_table(README.read_text()))
