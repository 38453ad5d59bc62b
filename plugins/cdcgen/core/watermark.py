"""The consistency watermark of a table: the time up to which every stream is in the lake.

YugabyteDB's "data consistency timestamp" (xCluster): consumers of the lake may treat
everything before it as complete, whatever stream they look at. It is computed from
bucket checkpoints (:class:`BucketCheckpoint`: up to when every stream of a lake bucket
is durably in the lake) and recorded with the table's :class:`TableProgress`.

A checkpoint covers a bucket, not a stream, because a bucket is already the unit every
window reads, writes and replaces (:mod:`cdcgen.core.windows`): all its streams move
together, so one row per generation and bucket says what one row per stream said, and a
cold start over 73,728 streams saves 16 rows instead of 147,456.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.lake_buckets import LakeBuckets
from cdcgen.core.log_ttls import LogTtls
from cdcgen.core.windows import GenerationSpan, TableState


@dataclass(frozen=True)
class BucketCheckpoint:
    """Every stream of ``generation`` in lake bucket ``bucket`` is in the lake up to
    ``checkpoint`` (buckets are numbered as the lake records them, fixed per table)."""

    generation: datetime
    bucket: int
    checkpoint: datetime
    window_start: datetime | None = None
    run_id: str = ""
    updated_at: datetime | None = None
    #: The lake table's version whose commit holds these rows (None: not recorded).
    lake_version: int | None = None


@dataclass(frozen=True)
class TableProgress:
    """What users and the report read: where extraction of a table stands."""

    table: TableRef
    started_at: datetime | None
    watermark: datetime | None
    watermark_updated_at: datetime | None
    run_id: str
    #: A lake table version that holds every row up to the watermark (time travel).
    lake_version: int | None = None
    #: The latest re-bootstrap's point: the log had expired changes before it unread.
    rebootstrapped_at: datetime | None = None
    #: The TTLs of the log rows after the watermark, as the runs recorded them.
    log_ttls: LogTtls | None = None

    @property
    def complete_since(self) -> datetime | None:
        """From when the lake holds every change of the table (up to the watermark)."""
        points = [t for t in (self.started_at, self.rebootstrapped_at) if t is not None]
        return max(points) if points else None

    def lag(self, now: datetime) -> float | None:
        """Seconds between ``now`` and the watermark (``None`` before the first run)."""
        if self.watermark is None:
            return None
        return (now - self.watermark).total_seconds()


def consistency_watermark(
    generations: Sequence[GenerationSpan], state: TableState, buckets: LakeBuckets
) -> datetime | None:
    """The time up to which every stream of the table is in the lake.

    YugabyteDB's "data consistency timestamp": the smallest effective checkpoint over the
    buckets (the lake's ``buckets``) that hold streams of a generation not yet
    complete. A complete generation (all its buckets checkpointed to its end) no longer
    holds the watermark back. ``None`` before the first run.
    """
    floor = state.floor
    if floor is None:
        return None
    result: datetime | None = None
    latest_end = floor
    for generation in generations:
        if generation.end is not None:
            latest_end = max(latest_end, generation.end)
            if generation.end <= floor:
                continue
        occupied = generation.buckets(buckets)
        if not occupied:
            continue
        reached = min(state.checkpoint(generation, b, floor) for b in occupied)
        if generation.end is not None and reached >= generation.end:
            continue
        result = reached if result is None else min(result, reached)
    if result is None:
        result = latest_end
    return max(result, floor)
