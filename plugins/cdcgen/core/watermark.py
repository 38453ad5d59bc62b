"""The consistency watermark of a table: the time up to which every stream is in the lake.

YugabyteDB's "data consistency timestamp" (xCluster): consumers of the lake may treat
everything before it as complete, whatever stream they look at. It is computed from
per-stream checkpoints (:class:`StreamCheckpoint`: up to when a stream is durably in the
lake) and recorded with the table's :class:`TableProgress`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.stream_id import StreamId
from cdcgen.core.windows import GenerationSpan, TableState


@dataclass(frozen=True)
class StreamCheckpoint:
    generation: datetime
    stream: StreamId
    checkpoint: datetime
    window_start: datetime | None = None
    run_id: str = ""
    updated_at: datetime | None = None


@dataclass(frozen=True)
class TableProgress:
    """What users and the report read: where extraction of a table stands."""

    table: TableRef
    started_at: datetime | None
    watermark: datetime | None
    watermark_updated_at: datetime | None
    run_id: str

    def lag(self, now: datetime) -> float | None:
        """Seconds between ``now`` and the watermark (``None`` before the first run)."""
        if self.watermark is None:
            return None
        return (now - self.watermark).total_seconds()


def consistency_watermark(
    generations: Sequence[GenerationSpan], state: TableState
) -> datetime | None:
    """The time up to which every stream of the table is in the lake.

    YugabyteDB's "data consistency timestamp": the smallest effective checkpoint over the
    streams of every generation not yet complete. A complete generation (all its streams
    checkpointed to its end) no longer holds the watermark back. ``None`` before the
    first run.
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
        streams = generation.streams
        if not streams:
            continue
        reached = min(state.checkpoint(generation, s, floor) for s in streams)
        if generation.end is not None and reached >= generation.end:
            continue
        result = reached if result is None else min(result, reached)
    if result is None:
        result = latest_end
    return max(result, floor)
