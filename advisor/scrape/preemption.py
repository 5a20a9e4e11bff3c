"""What preemption cost over a window: how it spread over the requests, and the work it threw away.

vLLM 0.30 on records, for every finished request, how often it was preempted (vllm:request_num_preemptions,
buckets 1, 2, 3, 4, 5, 10, 20: the first holds the never and the once preempted together). A preempted request
loses its KV blocks and computes its prompt and its output so far again; no metric counts those tokens, so they
are bracketed: at least the prompt, at most the prompt and the whole output, per preemption.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from advisor.scrape.snapshot import Histogram

# Of the finished requests, at most this share preempted twice or more, taking half the preemptions or more:
# one request (or a few) thrashing rather than the whole load.
FEW_SHARE = 0.1


def spread(histogram: Histogram | None) -> dict[str, Any]:
    """How the window's preemptions fell on its finished requests: broad pressure or a few thrashing."""
    if histogram is None or not histogram.count or not histogram.total:
        return {}
    once_or_never = dict(histogram.buckets).get(1.0, 0.0)
    repeated = histogram.count - once_or_never
    taken = _taken_at_least(histogram)
    most = _most(histogram)
    if repeated and repeated <= max(1.0, FEW_SHARE * histogram.count) and taken >= histogram.total / 2:
        said = (
            f"{repeated:g} of the {histogram.count:g} finished requests took at least {taken:g} of the "
            f"{histogram.total:g} preemptions (the most preempted {most}): a few requests thrashing, not broad "
            "pressure; look at their length before shrinking every request's share."
        )
    else:
        said = (
            f"{repeated:g} of the {histogram.count:g} finished requests were preempted more than once (the most "
            f"preempted {most}): broad pressure on the cache, not one request."
        )
    return {"repeatedly_preempted": repeated, "preemption_spread": said}


def _buckets(histogram: Histogram) -> Iterator[tuple[float, float, float]]:
    """Each bucket as (lower bound, upper bound, requests in it), from vLLM's cumulative counts."""
    lower, below = 0.0, 0.0
    for bound, cumulative in histogram.buckets:
        yield lower, bound, cumulative - below
        lower, below = bound, cumulative


def _taken_at_least(histogram: Histogram) -> float:
    """The preemptions of the requests preempted twice or more, at least: each bucket's requests took one more
    than the bucket below's bound (exact for 2 to 5)."""
    return sum((lower + 1) * count for lower, _, count in _buckets(histogram) if lower >= 1)


def _most(histogram: Histogram) -> str:
    """How often the most preempted request was: exact up to 5, a range above (integers in vLLM's buckets)."""
    low, high = max(((lower, upper) for lower, upper, count in _buckets(histogram) if count > 0), default=(0.0, 1.0))
    if math.isinf(high):
        return f"more than {low:g} times"
    if high - low > 1:
        return f"{low + 1:g} to {high:g} times"
    return "once" if high == 1 else f"{high:g} times"


def recomputed(values: dict[str, Any]) -> dict[str, Any]:
    """The tokens computed again, bracketed, and their share of all the tokens computed in the window."""
    preemptions, prompt = values.get("preemptions"), values.get("mean_prompt_length")
    output, computed = values.get("mean_generation_length"), values.get("tokens_computed")
    if not preemptions or prompt is None or output is None or not computed:
        return {}
    low, high = int(preemptions * prompt), int(preemptions * (prompt + output))
    return {
        "recomputed_min": low,
        "recomputed_max": high,
        "recomputed_share_min_pct": round(100 * low / (computed + low), 1),
        "recomputed_share_max_pct": round(100 * high / (computed + high), 1),
    }
