"""From stored description rows to a description, checking what lookup depends on.

Every way ScyllaDB stores a generation ends in ``(range_end, streams, ignore_msb)`` rows;
``set<blob>`` values come back sorted by bytes, not in shard order, so shard order is
recovered per range with :func:`cdcgen.core.topology.order_streams_by_shard`. Anything
that cannot be a valid description raises :class:`~cdcgen.core.errors.CorruptGeneration`
naming the generation and the problem, with the rows as read, so the extract step can
still show them to the validation.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import numpy as np

from cdcgen.core.errors import (
    CorruptGeneration,
    InvalidDescription,
    InvalidStreamId,
    StreamOrderError,
)
from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.stored_arrays import arrays_from_stored
from cdcgen.core.stream_id import STREAM_ID_SIZE, StreamId
from cdcgen.core.tablets import TabletStreamSet
from cdcgen.core.topology import TokenRange, TopologyDescription, order_streams_by_shard

RawRow = tuple[int, Iterable[bytes], int]
"""``(range_end, streams, ignore_msb)`` as read from any description table."""


def v1_generation_id(timestamp: datetime) -> str:
    """A V1 generation is known by its timestamp alone: its ISO form, milliseconds, UTC."""
    return timestamp.astimezone(UTC).isoformat(timespec="milliseconds")


def parse_stream(blob: Any, label: str, range_end: int) -> StreamId:
    if not isinstance(blob, bytes | bytearray):
        raise CorruptGeneration(f"{label}: range ending at {range_end} holds a non-blob {blob!r}")
    try:
        return StreamId(bytes(blob))
    except InvalidStreamId as exc:
        raise CorruptGeneration(f"{label}: range ending at {range_end}: {exc}") from exc


def description_from_rows(
    label: str, rows: Iterable[RawRow], *, shard_ordered: bool
) -> TopologyDescription:
    """Build a description from stored rows, validating what the lookup depends on.

    ``shard_ordered`` rows (V1 lists) keep their order; sets (v2, v3) are re-ordered by
    shard from each stream's token. Raises :class:`CorruptGeneration` with ``label``
    and the rows as read (``stored_rows``).
    """
    stored = list(rows)
    try:
        return _description_from_rows(label, stored, shard_ordered=shard_ordered)
    except CorruptGeneration as exc:
        exc.stored_rows = [(r[0], r[1], r[2]) for r in stored]
        raise


def _description_from_rows(
    label: str, rows: list[RawRow], *, shard_ordered: bool
) -> TopologyDescription:
    parsed = []
    for range_end, blobs, ignore_msb in rows:
        if range_end is None or ignore_msb is None or blobs is None:
            raise CorruptGeneration(f"{label}: a range row lacks range_end, streams or ignore_msb")
        streams = [parse_stream(b, label, range_end) for b in blobs]
        parsed.append((int(range_end), streams, int(ignore_msb)))
    if not parsed:
        raise CorruptGeneration(f"{label}: the description has no ranges")
    parsed.sort(key=lambda r: r[0])
    entries = []
    for i, (range_end, streams, ignore_msb) in enumerate(parsed):
        if not streams:
            raise CorruptGeneration(f"{label}: range ending at {range_end} has no streams")
        if not shard_ordered:
            start = parsed[i - 1][0]  # entry 0 wraps around from the last range end
            try:
                ordered = order_streams_by_shard(start, range_end, streams, ignore_msb)
            except StreamOrderError as exc:
                raise CorruptGeneration(
                    f"{label}: streams of range ({start}, {range_end}] do not match its "
                    f"{len(streams)} shards (a missing, duplicated or misplaced stream, or a "
                    f"gap in the ring): {exc}"
                ) from exc
            except ValueError as exc:
                raise CorruptGeneration(f"{label}: range ending at {range_end}: {exc}") from exc
        else:
            ordered = tuple(streams)
        try:
            entries.append(TokenRange(range_end, tuple(ordered), ignore_msb))
        except InvalidDescription as exc:
            raise CorruptGeneration(f"{label}: {exc}") from exc
    try:
        return TopologyDescription(tuple(entries))
    except InvalidDescription as exc:
        raise CorruptGeneration(f"{label}: {exc}") from exc


def tablets_description(stream_set: TabletStreamSet) -> TopologyDescription:
    """A tablets stream set as a description: one single-shard range per tablet.

    Range ``i`` ends at stream ``i``'s token (the tablet's last token), so the vnode
    lookup (first range end >= token) gives exactly ``get_tablet_stream``.
    """
    return TopologyDescription(tuple(TokenRange(s.token, (s,), 0) for s in stream_set.streams))


def arrays_from_rows(
    label: str, rows: Iterable[RawRow], *, shard_ordered: bool
) -> GenerationArrays:
    """:func:`description_from_rows` as arrays, without one object per stream.

    The vectorized path (:func:`cdcgen.core.stored_arrays.arrays_from_stored`) answers
    for well-formed rows; anything else goes through :func:`description_from_rows`, which
    raises the precise :class:`CorruptGeneration` (or, if it accepts the rows, gives the
    same arrays).
    """
    stored = list(rows)
    arrays = _stored_arrays(stored, shard_ordered)
    if arrays is not None:
        return arrays
    return GenerationArrays.from_description(
        description_from_rows(label, stored, shard_ordered=shard_ordered)
    )


def _stored_arrays(stored: list[RawRow], shard_ordered: bool) -> GenerationArrays | None:
    """The fast path's columns from the rows, or None where it cannot take them.

    Each range's blobs are checked and joined while they are in the cache (1.6M blobs
    as one flat list cost more, walked three times); one ``b"".join`` over them
    all would also first allocate a Py_buffer (80 bytes) per blob.
    """
    ends: list[int] = []
    ignores: list[int] = []
    counts: list[int] = []
    parts: list[bytes] = []
    kinds: set[type] = set()
    lengths: set[int] = set()
    for range_end, streams, ignore_msb in stored:
        if range_end is None or ignore_msb is None or streams is None:
            return None
        blobs = list(streams)  # iterated once, as the object path will again
        kinds.update(map(type, blobs))  # loops in C, unlike all(... for ...)
        lengths.update(map(len, blobs))
        if not kinds <= {bytes}:
            return None  # before the join, which takes any buffer
        parts.append(b"".join(blobs))
        ends.append(range_end)
        ignores.append(ignore_msb)
        counts.append(len(blobs))
    if not lengths <= {STREAM_ID_SIZE}:
        return None
    try:
        end_array = np.array(ends, dtype=np.int64)
        ignore_array = np.array(ignores, dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        return None
    matrix = np.frombuffer(b"".join(parts), dtype=np.uint8).reshape(-1, STREAM_ID_SIZE)
    return arrays_from_stored(
        end_array,
        ignore_array,
        np.array(counts, dtype=np.int64),
        matrix,
        shard_ordered=shard_ordered,
    )
