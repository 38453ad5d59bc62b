"""Freshness of a follow (continuous mode): how long after its write a row was durable.

A follow lists its cycles: each covered every write before some instant (a changes
cycle's ``closed_until``, an apply cycle's ``consistent_until``) and was durable at its
``finished_at``. A row written at ``t`` reached the lake (or the sink) with the first
cycle, in cycle order, that covered past ``t``: its freshness is that cycle's
``finished_at`` minus ``t``. Pure: the benchmark (``benchmarks/bench_follow.py``) feeds
it the written rows' CDC times and the cycles its follows returned.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime


class NotCovered(ValueError):
    """A written row no cycle covered: the follow ended before it closed."""


@dataclass(frozen=True)
class Covered:
    """One cycle: every write before ``until`` was durable at ``finished_at``."""

    until: datetime
    finished_at: datetime


def freshness_seconds(written: Iterable[datetime], cycles: Sequence[Covered]) -> list[float]:
    """Each write's freshness in seconds, in the order given; :class:`NotCovered` names
    the first write no cycle covered. ``cycles`` in the order they ran."""
    # The instant a write became durable is the earliest finish among the cycles that
    # covered it; in cycle order that is the first cycle covering it, as ``until`` only
    # grows. Built as a running maximum so a cycle covering less than one before it
    # (possible for an apply cycle that found nothing new) never wins.
    steps: list[Covered] = []
    for cycle in cycles:
        if not steps or cycle.until > steps[-1].until:
            steps.append(cycle)
    ends = [step.until for step in steps]
    out: list[float] = []
    for when in written:
        index = bisect_right(ends, when)  # the first end strictly after the write
        if index == len(ends):
            last = ends[-1].isoformat() if ends else "no cycle"
            raise NotCovered(f"a row written at {when.isoformat()} was never covered ({last})")
        out.append((steps[index].finished_at - when).total_seconds())
    return out


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in (0, 1]): the smallest value at least
    ``share`` of the values are at or below."""
    if not values:
        raise ValueError("no values")
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], not {share}")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def summary(values: Sequence[float]) -> dict[str, float]:
    """p50, p95 and max, in seconds to a tenth."""
    return {
        "p50": round(percentile(values, 0.50), 1),
        "p95": round(percentile(values, 0.95), 1),
        "max": round(max(values), 1),
    }
