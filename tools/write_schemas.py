"""Write the JSON Schemas of the advisor's documents (advisor/report/schemas/*.json) from the models."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.report.contract import json_schemas

FOLDER = Path(__file__).resolve().parent.parent / "advisor" / "report" / "schemas"


def schema_texts() -> dict[Path, str]:
    return {FOLDER / f"{name}.json": json.dumps(schema, indent=2) + "\n" for name, schema in json_schemas().items()}


if __name__ == "__main__":
    for path, text in schema_texts().items():
        path.write_text(text)
        print(path)
