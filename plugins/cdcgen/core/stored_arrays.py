"""Stored description rows to :class:`GenerationArrays`, at numpy speed.

ScyllaDB keeps each range's streams in shard order, but a ``set<blob>`` comes back
sorted by bytes; :func:`cdcgen.core.topology.order_streams_by_shard` recovers the order
one stream at a time, which for the seed's 1,638,400 streams is slow. This
module gives the same answer for whole columns: shard ``j`` of a range gets the stream
whose token is ``find_first_token_for_shard(start, end, j, ...)``, streams sharing a
token (the shards with no token in the range, all on ``range_end``) taken in byte order
by the lowest shards first, exactly as the scalar procedure pops them.

It is a fast path, not a second rulebook: it answers only when every rule the object
path enforces visibly holds (16-byte IDs of a known version, no empty range, no
duplicate, distinct range ends, possible sharding, every stream on its shard's token),
and returns ``None`` otherwise, so that the caller runs the object path, which either
names the problem exactly or agrees. ``tests/unit/core/test_stored_arrays.py`` checks that the
two give equal arrays on valid input and that this one declines every corruption.
"""

from __future__ import annotations

import numpy as np

from cdcgen.core.errors import InvalidDescription
from cdcgen.core.generation_arrays import ByteMatrix, GenerationArrays
from cdcgen.core.stream_id import STREAM_ID_SIZE, VERSION_1
from cdcgen.core.token_arrays import Int64Array, UInt64Array, expected_first_tokens

_VERSION_MASK = 0x0F
_ROW = np.dtype((np.void, STREAM_ID_SIZE))


def arrays_from_stored(
    range_ends: Int64Array,
    ignore_msb: Int64Array,
    counts: Int64Array,
    stream_bytes: ByteMatrix,
    *,
    shard_ordered: bool,
) -> GenerationArrays | None:
    """The description of stored rows (any row order; each row's ``counts[i]`` streams
    consecutive in ``stream_bytes``, in byte order, or in shard order when
    ``shard_ordered``), or ``None`` when a rule may be broken (see the module doc)."""
    entries = range_ends.shape[0]
    if entries == 0 or counts.shape != (entries,) or ignore_msb.shape != (entries,):
        return None
    if stream_bytes.shape != (int(counts.sum()), STREAM_ID_SIZE):
        return None
    if np.any(counts < 1) or np.any(ignore_msb < 0) or np.any(ignore_msb > 63):
        return None
    if np.any((stream_bytes[:, STREAM_ID_SIZE - 1] & _VERSION_MASK) > VERSION_1):
        return None
    order = np.argsort(range_ends, kind="stable")
    ends, ignores, per_entry = range_ends[order], ignore_msb[order], counts[order]
    if np.any(ends[1:] <= ends[:-1]):
        return None
    source_offsets = np.zeros(entries + 1, dtype=np.int64)
    np.cumsum(counts, out=source_offsets[1:])
    offsets = np.zeros(entries + 1, dtype=np.int64)
    np.cumsum(per_entry, out=offsets[1:])
    # Stream rows gathered in range-end order (rows as stored may come in any order).
    entry_of_row = np.repeat(np.arange(entries, dtype=np.int64), per_entry)
    position = np.arange(offsets[-1], dtype=np.int64) - offsets[:-1][entry_of_row]
    # Whole 16-byte rows as one void item each: gathers and scatters much faster.
    source = np.ascontiguousarray(stream_bytes).view(_ROW).reshape(-1)
    rows = source[source_offsets[:-1][order][entry_of_row] + position]
    if not shard_ordered:
        gathered = rows.view(np.uint8).reshape(-1, STREAM_ID_SIZE)
        placed = _shard_positions(ends, ignores, per_entry, entry_of_row, position, gathered)
        if placed is None:
            return None
        ordered = np.empty_like(rows)
        ordered[placed] = rows
        rows = ordered
    try:
        matrix = rows.view(np.uint8).reshape(-1, STREAM_ID_SIZE)
        return GenerationArrays(ends, per_entry, ignores, offsets, matrix)
    except InvalidDescription:
        return None


def _shard_positions(
    ends: Int64Array,
    ignores: Int64Array,
    per_entry: Int64Array,
    entry_of_row: Int64Array,
    shard: Int64Array,
    gathered: ByteMatrix,
) -> Int64Array | None:
    """Row ``r`` of ``gathered`` (``shard[r]``-th of its entry's) goes to row
    ``result[r]`` (its shard's), or None."""
    starts = np.roll(ends, 1)  # entry 0 wraps around from the last range end
    expected, possible = expected_first_tokens(
        starts[entry_of_row], ends[entry_of_row], shard, per_entry[entry_of_row],
        ignores[entry_of_row],
    )  # fmt: skip
    if not possible.all():
        return None
    words = np.ascontiguousarray(gathered).view(">u8").astype(np.uint64)
    tokens, low = words[:, 0].view(np.int64), words[:, 1]
    placed = _placed_by_ring(ends, entry_of_row, tokens, low, expected)
    if placed is not None:
        return placed
    # Streams by (entry, token, remaining bytes); shards by (entry, expected token, shard).
    streams = np.lexsort((low, tokens, entry_of_row))
    shards = np.lexsort((shard, expected, entry_of_row))
    same = (tokens[streams][1:] == tokens[streams][:-1]) & (low[streams][1:] == low[streams][:-1])
    if np.any(same & (entry_of_row[streams][1:] == entry_of_row[streams][:-1])):
        return None  # a stream listed twice in one range
    return _pair(streams, shards, tokens, expected)


def _placed_by_ring(
    ends: Int64Array,
    entry_of_row: Int64Array,
    tokens: Int64Array,
    low: UInt64Array,
    expected: Int64Array,
) -> Int64Array | None:
    """:func:`_shard_positions` without 3-key sorts, for rows as a ``set<blob>`` returns
    them, or None (then the general sorts decide).

    These single-key stable sorts are far quicker than the two lexsorts because their
    keys are already nearly sorted. A token's distance
    along the ring from the start of entry 0's range orders valid rows by entry (ranges
    partition the ring), and in a range it is byte order rotated, so one stable sort puts
    the streams in (entry, ring position, remaining bytes) order, ties kept in byte
    order, and the shards in (entry, ring position, shard) order. Nothing is assumed: the
    streams' order is checked strictly increasing (which also rules out duplicates) and
    each stream paired with a shard of its own entry and token, else None.
    """
    ring_start = np.uint64((int(ends[-1]) + 1) % 2**64)
    stream_ring = tokens.view(np.uint64) - ring_start
    streams = np.argsort(stream_ring, kind="stable")
    by_ring, by_low = stream_ring[streams], low[streams]
    rising = (by_ring[1:] > by_ring[:-1]) | (
        (by_ring[1:] == by_ring[:-1]) & (by_low[1:] > by_low[:-1])
    )
    if not rising.all():
        return None
    shards = np.argsort(expected.view(np.uint64) - ring_start, kind="stable")
    if not np.array_equal(entry_of_row[streams], entry_of_row[shards]):
        return None
    return _pair(streams, shards, tokens, expected)


def _pair(
    streams: Int64Array, shards: Int64Array, tokens: Int64Array, expected: Int64Array
) -> Int64Array | None:
    """``streams[k]`` goes to ``shards[k]`` when their tokens agree (both sorted alike,
    entry by entry, no stream twice in a range)."""
    if not np.array_equal(tokens[streams], expected[shards]):
        return None  # some stream is on no shard's token (or one is missing)
    # Rows are entry-contiguous with shard = position, so a shard's row is its sort index.
    placed = np.empty(tokens.shape[0], dtype=np.int64)
    placed[streams] = shards
    return placed
