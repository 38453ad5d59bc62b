"""The whole token ring as half-open ranges ``(low, high]``, for scans of a table.

A scan of a CDC log by token ranges (the change extraction's range strategy,
:mod:`cdcgen.changes.range_reads`) must see every partition exactly once, whatever the
partitioner: Murmur3 (an Apache Cassandra log) or ScyllaDB's CDC partitioner (the token
is the stream ID's first 8 bytes). Both place partitions at tokens in
``(MIN_TOKEN, MAX_TOKEN]``: Murmur3 maps the minimum to the maximum and ScyllaDB keeps the
minimum token as the ring's start, owned by no key. So the ranges start just above
``MIN_TOKEN`` and end at ``MAX_TOKEN``, cut at the ring's own tokens (the cluster's token
map): each range then has one primary replica, the owner of its ``high`` end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN


@dataclass(frozen=True, order=True)
class TokenRange:
    """Tokens ``t`` with ``low < t <= high``."""

    low: int
    high: int

    def __post_init__(self) -> None:
        if not MIN_TOKEN <= self.low < self.high <= MAX_TOKEN:
            raise ValueError(f"not a token range: ({self.low}, {self.high}]")

    def split(self, parts: int) -> list[TokenRange]:
        """``parts`` adjacent ranges of (nearly) equal width covering this one."""
        parts = max(1, min(parts, self.high - self.low))
        width = self.high - self.low
        edges = [self.low + width * i // parts for i in range(parts + 1)]
        return [TokenRange(edges[i], edges[i + 1]) for i in range(parts)]

    def cut(self, tokens: Iterable[int]) -> list[TokenRange]:
        """This range cut at each of ``tokens`` inside it (a cut token ends a piece)."""
        inside = sorted({t for t in tokens if self.low < t < self.high})
        edges = [self.low, *inside, self.high]
        return [TokenRange(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


def ring_ranges(ring: Iterable[int], at_least: int = 1) -> list[TokenRange]:
    """The ring ``(MIN_TOKEN, MAX_TOKEN]`` cut at the ring's tokens, in order, each range
    split evenly until there are ``at_least`` ranges (an empty ring is one range).

    Cutting only inside ring ranges keeps every range on one primary replica."""
    cuts = sorted({t for t in ring if MIN_TOKEN < t < MAX_TOKEN})
    edges = [MIN_TOKEN, *cuts, MAX_TOKEN]
    ranges = [TokenRange(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]
    if len(ranges) >= at_least:
        return ranges
    per_range = -(-at_least // len(ranges))
    return [part for r in ranges for part in r.split(per_range)]
