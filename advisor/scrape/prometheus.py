"""`--prometheus URL --since 1h --match LABELS`: vLLM's series from a Prometheus server, one window per replica.

Two instant queries through the HTTP API, at the window's end and at its start, give each replica (each
`instance`) a snapshot of both moments; the metric rules then read counters, rates and histogram quantiles
as what changed in between, as they do between two polls of `follow`. A replica whose series begin inside
the window has an empty start: its counts are its whole life, which lies in the window, and it gives no rate.
"""

from __future__ import annotations

import json
import math
import time
import urllib.parse
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from advisor.scrape.fetch import MetricsError, read, shown
from advisor.scrape.names import table
from advisor.scrape.snapshot import PREFIX, Sample, Snapshot

# Suffixes of a histogram's series, and of a counter's, in Prometheus' storage (the family is what is left).
HISTOGRAM_PARTS = ("_bucket", "_sum", "_count", "_created")


def read_window(url: str, since: float, match: str | None, end: float | None = None) -> list[Snapshot]:
    """One snapshot per replica at the window's end, each holding its start (`earlier`); MetricsError with a
    one-line reason when the server cannot be read, refuses the query or has no vLLM series in the window."""
    if urllib.parse.urlsplit(url).scheme.lower() not in ("http", "https"):
        raise MetricsError(url, "--prometheus takes a Prometheus server's http(s) URL")
    end = time.time() if end is None else end
    selector = "{" + ",".join([f'__name__=~"{PREFIX}.+"'] + ([match] if match else [])) + "}"
    at_end = _replicas(_query(url, selector, end))
    if not at_end:
        wanted = f" matching {match}" if match else ""
        raise MetricsError(shown(url), f"no {PREFIX} series{wanted} at {_moment(end)} (is it scraping vLLM?)")
    at_start = _replicas(_query(url, selector, end - since))
    out = []
    for instance, series in sorted(at_end.items()):
        source = f"{shown(url)} instance={instance}" if instance else shown(url)
        now = _snapshot(source, end, series)
        now.earlier = _snapshot(source, end - since, at_start.get(instance, []))
        out.append(now)
    return out


def _query(url: str, selector: str, at: float) -> list[dict[str, Any]]:
    """The instant vector of one query; the server's own reason when it refuses."""
    address = url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": selector, "time": f"{at:.3f}"})
    try:
        body = read(address)
    except MetricsError as error:
        refused = _api_error(error.body)
        raise MetricsError(shown(url), f"query refused: {refused}" if refused else error.reason) from None
    try:
        answer = json.loads(body.text)
        result: list[dict[str, Any]] = answer["data"]["result"]
        if answer.get("status") != "success" or answer["data"].get("resultType") != "vector":
            raise ValueError
    except (ValueError, KeyError, TypeError):
        raise MetricsError(shown(url), "not a Prometheus query API (no JSON vector in the answer)") from None
    return result


def _api_error(body: str) -> str | None:
    try:
        return str(json.loads(body)["error"])
    except (ValueError, KeyError, TypeError):
        return None


def _replicas(result: list[dict[str, Any]]) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    """The series by the instance Prometheus scraped them from (one vLLM server each)."""
    out: dict[str, list[tuple[str, dict[str, str], float]]] = defaultdict(list)
    for series in result:
        labels = dict(series["metric"])
        name, value = labels.pop("__name__"), float(series["value"][1])
        if not math.isnan(value):
            out[labels.get("instance", "")].append((name, labels, value))
    return dict(out)


def _snapshot(source: str, at: float, series: list[tuple[str, dict[str, str], float]]) -> Snapshot:
    """The series as prometheus_client's parser groups a dump: by family, with each family's type."""
    snapshot = Snapshot(source, datetime.fromtimestamp(at, UTC), fetched=True)
    histograms = {name.removesuffix("_bucket") for name, labels, _ in series if name.endswith("_bucket")}
    for name, labels, value in series:
        family, kind = _family(name, histograms)
        snapshot.types.setdefault(family, kind)
        snapshot.samples.setdefault(family, []).append(Sample(name, labels, value))
    return snapshot


def _family(name: str, histograms: set[str]) -> tuple[str, str]:
    """A stored series' family and type: the one vLLM's source gives it when known, else from its suffix."""
    for suffix in HISTOGRAM_PARTS:
        if name.endswith(suffix) and name.removesuffix(suffix) in histograms:
            return name.removesuffix(suffix), "histogram"
    for suffix in ("_total", "_created"):
        family = name.removesuffix(suffix)
        if name.endswith(suffix) and table()["metrics"].get(family, {}).get("type", "counter") == "counter":
            return family, "counter"
    return name, table()["metrics"].get(name, {}).get("type", "gauge")


def _moment(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")
