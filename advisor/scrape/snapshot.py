"""Prometheus text -> a Snapshot of vLLM's samples, parsed with prometheus_client's own text parser."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from prometheus_client.parser import text_string_to_metric_families

from advisor.scrape.fetch import Body, MetricsError

PREFIX = "vllm:"


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class Histogram:
    """A histogram summed over its label sets (engines, models): cumulative buckets, count and sum."""

    buckets: tuple[tuple[float, float], ...]  # (upper bound, cumulative count), ascending, +Inf last
    count: float
    total: float

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count > 0 else None

    def since(self, earlier: Histogram | None) -> Histogram:
        """The observations made after `earlier` (a previous poll of the same server); all of them when
        there is none or the server restarted in between (its counts went back)."""
        before = dict(earlier.buckets) if earlier is not None else {}
        if earlier is None or earlier.count > self.count or before.keys() != dict(self.buckets).keys():
            return self
        return Histogram(
            tuple((bound, count - before[bound]) for bound, count in self.buckets),
            self.count - earlier.count,
            self.total - earlier.total,
        )

    def quantile(self, q: float) -> float | None:
        """As Prometheus' histogram_quantile: linear within the bucket the rank falls in; the highest
        finite bound when it falls in +Inf."""
        if self.count <= 0 or not self.buckets:
            return None
        rank, lower, below = q * self.count, 0.0, 0.0
        for bound, cumulative in self.buckets:
            if cumulative >= rank:
                if math.isinf(bound):
                    return lower
                inside = cumulative - below
                return lower + (bound - lower) * ((rank - below) / inside if inside else 1.0)
            lower, below = bound, cumulative
        return lower


@dataclass
class Snapshot:
    """The vllm: samples of one source at one moment, grouped by family (prometheus_client's names:
    a counter's family has no _total, its sample has)."""

    source: str
    read_at: datetime
    fetched: bool = False
    types: dict[str, str] = field(default_factory=dict)  # family -> counter, gauge, histogram, ...
    samples: dict[str, list[Sample]] = field(default_factory=dict)  # family -> its samples
    earlier: Snapshot | None = None  # the same server at the start of the window the source covers

    def family(self, names: tuple[str, ...]) -> str | None:
        """The first of these family names (a metric's names across releases) that this dump has."""
        return next((name for name in names if name in self.samples), None)

    def total(self, names: tuple[str, ...], suffix: str = "") -> float | None:
        """The sum of a counter's or gauge's samples over its label sets; None when the dump lacks it."""
        name = self.family(names)
        if name is None:
            return None
        wanted = name + (suffix or ("_total" if self.types.get(name) == "counter" else ""))
        return sum(s.value for s in self.samples[name] if s.name == wanted)

    def by_label(self, names: tuple[str, ...], label: str) -> dict[str, float]:
        """A counter's or gauge's samples summed per value of one label (finished_reason, engine, ...)."""
        name = self.family(names)
        out: dict[str, float] = defaultdict(float)
        for sample in self.samples.get(name, []) if name else []:
            if sample.name.endswith("_created") or label not in sample.labels:
                continue
            out[sample.labels[label]] += sample.value
        return dict(out)

    def histogram(self, names: tuple[str, ...]) -> Histogram | None:
        name = self.family(names)
        if name is None or self.types.get(name) != "histogram":
            return None
        buckets: dict[float, float] = defaultdict(float)
        count = total = 0.0
        for sample in self.samples[name]:
            if sample.name == name + "_bucket":
                buckets[float(sample.labels["le"])] += sample.value
            elif sample.name == name + "_count":
                count += sample.value
            elif sample.name == name + "_sum":
                total += sample.value
        return Histogram(tuple(sorted(buckets.items())), count, total)

    def sums(self) -> dict[str, float]:
        """Each sample name's value summed over its label sets; histogram buckets are left out (a sum over
        `le` means nothing)."""
        out: dict[str, float] = defaultdict(float)
        for samples in self.samples.values():
            for sample in samples:
                if not sample.name.endswith("_bucket"):
                    out[sample.name] += sample.value
        return dict(out)

    def label_values(self, names: tuple[str, ...], label: str) -> list[str]:
        name = self.family(names)
        return sorted({s.labels[label] for s in self.samples.get(name, []) if label in s.labels}) if name else []


def parse(body: Body) -> Snapshot:
    """The vllm: families of a body; MetricsError for text that is not Prometheus or holds no vLLM metric."""
    snapshot = Snapshot(body.source, body.read_at, body.fetched)
    try:
        for family in text_string_to_metric_families(body.text):
            if not family.name.startswith(PREFIX):
                continue
            samples = [Sample(s.name, dict(s.labels), float(s.value)) for s in family.samples]
            if any(math.isnan(s.value) for s in samples):
                samples = [s for s in samples if not math.isnan(s.value)]
            snapshot.types[family.name] = family.type
            snapshot.samples.setdefault(family.name, []).extend(samples)
    except (ValueError, TypeError, KeyError, IndexError) as error:
        raise MetricsError(body.source, f"not Prometheus text: {_first_bad_line(body.text, error)}") from None
    if not snapshot.samples:
        raise MetricsError(body.source, "no vllm: metric in it (not a vLLM /metrics)")
    return snapshot


def _first_bad_line(text: str, error: Exception) -> str:
    """Which line the parser refused, for the one-line message (the parser's own error names none)."""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            list(text_string_to_metric_families(line + "\n"))
        except Exception:  # any refusal names the line; the text of the error is the parser's
            return f"line {number}: {line[:60]!r}"
    return str(error)[:80]
