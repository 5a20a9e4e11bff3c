"""A real Prometheus on loopback holding a recorded vLLM series (tools/live/capture_series.py), backfilled
with promtool so that the series ends a few seconds before now, as a scraping Prometheus would hold it."""

from __future__ import annotations

import gzip
import json
import subprocess
import time
import urllib.request
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ENDS_BEFORE_NOW = 10.0  # seconds between the last recorded scrape and the moment the test queries


@dataclass(frozen=True)
class Recorded:
    """A server's scrapes: (second since the first, Prometheus text), in order."""

    scrapes: list[tuple[float, str]]

    @classmethod
    def read(cls, path: Path) -> Recorded:
        with gzip.open(path, "rt") as handle:
            return cls([(item["second"], item["text"]) for item in map(json.loads, handle)])

    @property
    def length(self) -> float:
        return self.scrapes[-1][0]


def openmetrics(recorded: Recorded, instance: str, end: float) -> str:
    """The vllm: samples as OpenMetrics text with timestamps, the last scrape at `end`, labelled as a scrape of
    `instance` by job "vllm" (what promtool backfills): each family's points grouped by label set, in time."""
    types: dict[str, str] = {}
    points: dict[str, dict[tuple, list[str]]] = defaultdict(lambda: defaultdict(list))
    for second, text in recorded.scrapes:
        at = end - recorded.length + second
        for family in text_string_to_metric_families(text):
            if not family.name.startswith("vllm:"):
                continue
            types[family.name] = family.type
            for sample in family.samples:
                labels = {**sample.labels, "instance": instance, "job": "vllm"}
                series = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
                shown = ",".join(f'{k}="{_escaped(v)}"' for k, v in labels.items())
                points[family.name][series].append(f"{sample.name}{{{shown}}} {sample.value} {at:.3f}")
    lines = []
    for name, kind in types.items():
        lines.append(f"# TYPE {name} {kind}")
        for series in points[name].values():
            lines += series
    return "\n".join([*lines, "# EOF", ""])


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def backfill(promtool: str, text: str, folder: Path) -> Path:
    data = folder / "data"
    source = folder / "series.om"
    source.write_text(text)
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return data


def start(prometheus: str, data: Path, port: int, folder: Path) -> subprocess.Popen[bytes]:
    """Prometheus serving the backfilled blocks and scraping nothing; returns once it answers queries."""
    config = folder / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
    server = subprocess.Popen(
        [
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(folder / "prometheus.log").open("wb"),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2) as answer:
                if answer.status == 200:
                    return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise RuntimeError(f"Prometheus did not get ready: {(folder / 'prometheus.log').read_text()[-2000:]}")
