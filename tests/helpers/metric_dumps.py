"""Real /metrics dumps of fixtures/live, edited minimally in memory (rules/metrics/README.md says how)."""

from __future__ import annotations

import re
from datetime import timedelta

from conftest import FIXTURES

from advisor.scrape.fetch import Body, read
from advisor.scrape.snapshot import parse

SAMPLE = re.compile(r"^(?P<name>[^{\s]+)(?P<labels>\{[^}]*\})?\s+(?P<value>\S+)$")


def edited(text: str, settings: dict, observations: dict) -> str:
    """The dump with `set` samples given new values and `observe` observations added to histograms."""
    out = []
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match and not line.startswith("#"):
            name, labels, value = match["name"], match["labels"] or "", float(match["value"])
            for key, new in settings.items():
                wanted, _, wanted_labels = key.partition("{")
                pairs = [p.split("=") for p in wanted_labels.rstrip("}").split(",") if p]
                if name == wanted and all(f'{k}="{v}"' in labels for k, v in pairs):
                    value = float(new)
            for histogram, added in observations.items():
                for seen, count in added:
                    bound = re.search(r'le="([^"]+)"', labels)
                    if (name == histogram + "_bucket" and float(bound[1]) >= seen) or name == histogram + "_count":
                        value += count
                    elif name == histogram + "_sum":
                        value += seen * count
            line = f"{name}{labels} {value!r}"
        out.append(line)
    return "\n".join(out) + "\n"


def snapshot_of(path: str, settings: dict | None = None, observations: dict | None = None, ago: float = 0):
    body = read(str(FIXTURES / path))
    text = edited(body.text, settings or {}, observations or {})
    return parse(Body(text, path, body.read_at - timedelta(seconds=ago), fetched=False))
