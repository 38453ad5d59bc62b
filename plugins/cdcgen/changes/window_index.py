"""Which planned read a scanned log row belongs to: stream and time to lake partition.

A token-range scan (:mod:`.range_reads`) returns every row of the ring in the job's
time span; each row goes exactly where the per-stream strategy would have put it. The
index is built from the very :class:`~.stream_reads.StreamRead` records that strategy
would query (same streams, same millisecond bounds), so both strategies agree by
construction: a row of stream ``s`` at ``t`` goes to the read of ``s`` with
``start <= t < end``, and is dropped when there is none (a stream of another bucket or
generation than the job's, a time before the bucket's checkpoint).

Row times are the microseconds inside ``cdc$time``; the per-stream query bounds
``cdc$time`` by ``minTimeuuid(ms)``, and a timeuuid is at or after ``minTimeuuid(t)``
exactly when its timestamp is at or after ``t``, so comparing microseconds with the
millisecond bounds (times 1000) is exact. Assignment is vectorised (numpy): streams are
16-byte IDs looked up in a sorted array, each stream's reads sorted by start.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cdcgen.changes.errors import OverlappingReads
from cdcgen.changes.stream_reads import StreamRead

IntArray = npt.NDArray[np.int64]

#: Placement code of a row that belongs to no planned read.
DROPPED = -1


def stream_keys(streams: Sequence[bytes]) -> npt.NDArray[np.void]:
    """16-byte stream IDs as one numpy array (sortable, searchable, compared as bytes)."""
    if not streams:
        return np.empty(0, dtype="V16")
    return np.frombuffer(b"".join(streams), dtype="V16")


@dataclass(frozen=True)
class WindowIndex:
    """The reads of one job, by stream then start; picklable (Spark broadcasts it)."""

    streams: npt.NDArray[np.void]  # unique stream IDs, sorted
    offsets: IntArray  # stream i's reads are entries offsets[i]:offsets[i + 1]
    starts_us: IntArray  # per entry
    ends_us: IntArray
    placement: IntArray  # per entry: index into ``placements``
    placements: tuple[tuple[str, str, int], ...]  # (generation, window, bucket)

    @classmethod
    def of(cls, reads: Sequence[StreamRead]) -> WindowIndex:
        """The index of ``reads``; raises :class:`OverlappingReads` if a stream's reads overlap."""
        ordered = sorted(reads, key=lambda r: (r.stream, r.start_ms))
        codes: dict[tuple[str, str, int], int] = {}
        placement = [codes.setdefault(r.placement, len(codes)) for r in ordered]
        keys = stream_keys([r.stream for r in ordered])
        streams, first = np.unique(keys, return_index=True)
        offsets = np.append(first, len(ordered)).astype(np.int64)
        starts = np.array([r.start_ms * 1000 for r in ordered], dtype=np.int64)
        ends = np.array([r.end_ms * 1000 for r in ordered], dtype=np.int64)
        same_stream = keys[1:] == keys[:-1]
        if np.any(same_stream & (starts[1:] < ends[:-1])):
            raise OverlappingReads("a stream has overlapping windows in one job")
        return cls(
            streams, offsets, starts, ends, np.array(placement, dtype=np.int64),
            tuple(codes),
        )  # fmt: skip

    @property
    def max_reads_per_stream(self) -> int:
        return int(np.diff(self.offsets).max()) if len(self.streams) else 0

    @property
    def low_us(self) -> int:
        """The earliest start: rows before it belong to no read."""
        return int(self.starts_us.min()) if len(self.starts_us) else 0

    @property
    def high_us(self) -> int:
        """The latest end (exclusive)."""
        return int(self.ends_us.max()) if len(self.ends_us) else 0

    def assign(self, streams: npt.NDArray[np.void], micros: IntArray) -> IntArray:
        """Per row (stream ID, microseconds), its placement code, or :data:`DROPPED`."""
        result = np.full(len(streams), DROPPED, dtype=np.int64)
        if not len(streams) or not len(self.streams):
            return result
        position = np.searchsorted(self.streams, streams)
        clipped = np.minimum(position, len(self.streams) - 1)
        known = self.streams[clipped] == streams
        first = self.offsets[clipped]
        count = np.where(known, self.offsets[clipped + 1] - first, 0)
        for k in range(self.max_reads_per_stream):  # 1 but for backfills
            entry = np.minimum(first + k, len(self.starts_us) - 1)
            inside = (
                (k < count) & (self.starts_us[entry] <= micros) & (micros < self.ends_us[entry])
            )
            result[inside] = self.placement[entry[inside]]
        return result
