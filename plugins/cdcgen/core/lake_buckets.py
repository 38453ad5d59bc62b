"""Which lake bucket a stream's changes go to: a slice of the ring, or (older lakes) a hash.

A bucket is the unit the lake replaces and a checkpoint covers (:mod:`.windows`). Its
rule decides what one Spark task writes. A token-range scan (the change extraction's
range strategy) reads partitions in token order, so when a bucket is a slice of the
ring (``ring``) a task scanning inside one slice writes to one bucket: one Parquet file
per window. When buckets hash the stream ID (``crc32``, the first layout) every range
holds streams of every bucket, and each task writes buckets x windows small files, so a
backlog over several buckets runs markedly slower than over one (measured with
``benchmarks/bench_changes.py --shards 72 --vnodes 1024 --backlog``).

The token is the log table's own partitioner's (ScyllaDB's CDC partitioner: the stream
ID's first 8 bytes; Murmur3 in a sandbox kept by Apache Cassandra), given as
``token_of``: that is the order a scan returns. Slices are equal shares of
``(MIN_TOKEN, MAX_TOKEN]``, where every partition token lies
(:mod:`.token_ranges`). A lake records its rule with its bucket count and keeps both
for life: changing either would move streams between buckets and break the resume rule.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from cdcgen.core.stream_id import StreamId, cdc_partitioner_token
from cdcgen.core.token_ranges import TokenRange
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN

#: ``stream ID -> token`` under the log table's partitioner.
TokenOf = Callable[[bytes], int]

_RING = 1 << 64


class BucketRule(StrEnum):
    """How a lake assigns streams to buckets (recorded in its layout file)."""

    CRC32 = "crc32"  # CRC-32 of the stream ID modulo the count (layout version 1)
    RING = "ring"  # the slice of the ring holding the stream's log partition


@dataclass(frozen=True)
class LakeBuckets:
    """A lake's buckets: how many, by which rule, with the log partitioner's tokens."""

    count: int = 8
    rule: BucketRule = BucketRule.RING
    token_of: TokenOf = cdc_partitioner_token

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError("buckets must be at least 1")

    def of(self, stream: StreamId) -> int:
        """The bucket of ``stream``, in ``range(count)``."""
        if self.rule is BucketRule.CRC32:
            return zlib.crc32(stream.raw) % self.count
        return self.of_token(self.token_of(stream.raw))

    def of_token(self, token: int) -> int:
        """The ring slice holding ``token`` (a partition token, above ``MIN_TOKEN``)."""
        return ((token - MIN_TOKEN - 1) * self.count) >> 64

    @property
    def ring_slices(self) -> tuple[TokenRange, ...] | None:
        """Bucket ``k``'s tokens as the ``k``-th range, for scans that should stay inside
        one bucket. None for ``crc32``, whose buckets are not slices of the ring."""
        if self.rule is BucketRule.CRC32:
            return None
        ends = [MIN_TOKEN + -(-(k * _RING) // self.count) for k in range(1, self.count)]
        edges = [MIN_TOKEN, *ends, MAX_TOKEN]
        return tuple(TokenRange(edges[k], edges[k + 1]) for k in range(self.count))
