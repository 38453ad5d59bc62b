"""Flatten a generation into one row per stream, with every fact validation needs.

Each row carries its stream ID decoded (token, version, vnode index bits, random bits),
the entry it was stored in (index, range, ignore_msb, number of streams = the owner's
shard count at creation) and ``expected_first_token``: the token
``find_first_token_for_shard(range_start, range_end, shard, shard_count, ignore_msb)``
that ScyllaDB's ``make_new_generation_description`` gives stream ``shard`` of that entry.
With those columns every colocation rule of the design doc (section 3) is a one-line
comparison inside a row, which is what lets Great Expectations check them as plain SQL.

Everything is computed with numpy over whole columns: 100 nodes x 256 vnodes x 64
shards is 1,638,400 streams, and one Python object per stream would cost minutes and
gigabytes. The result is a :class:`pyarrow.Table` (binary columns stay binary; Spark and
Parquet take it without copying through Python).
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable
from datetime import datetime

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from cdcgen.core.ring import LEFT, Ring
from cdcgen.core.stream_id import INDEX_SHIFT, MAX_INDEX, RANDOM_SHIFT, STREAM_ID_SIZE
from cdcgen.core.time import generation_timestamp, to_millis
from cdcgen.core.token_arrays import expected_first_tokens
from cdcgen.core.tokens import MIN_TOKEN
from cdcgen.core.topology import Node
from cdcgen.generation_lake.description_columns import DescriptionColumns

Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

STREAMS_SCHEMA = pa.schema(
    [
        pa.field("generation_timestamp", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("generation_id", pa.string(), nullable=False),
        pa.field("entry_index", pa.int32(), nullable=False),
        pa.field("range_start", pa.int64(), nullable=False),
        pa.field("range_end", pa.int64(), nullable=False),
        pa.field("ignore_msb", pa.int16(), nullable=False),
        pa.field("shard_count", pa.int32(), nullable=False),
        pa.field("shard", pa.int32(), nullable=False),
        pa.field("stream_id", pa.binary(), nullable=False),
        pa.field("stream_id_hex", pa.string(), nullable=False),
        pa.field("stream_token", pa.int64(), nullable=False),
        # Null when the blob is not 16 bytes: it then has no version/index/random fields.
        pa.field("version", pa.int8()),
        pa.field("index_bits", pa.int32()),
        pa.field("random_bits", pa.int64()),
        # Null when the entry's sharding (shard count, ignore_msb) is impossible.
        pa.field("expected_first_token", pa.int64()),
    ]
)
"""One row per stream; ``shard_count`` is the number of streams of the row's entry."""

ENTRIES_SCHEMA = pa.schema(
    [
        pa.field("entry_index", pa.int32(), nullable=False),
        pa.field("range_start", pa.int64(), nullable=False),
        pa.field("range_end", pa.int64(), nullable=False),
        pa.field("ignore_msb", pa.int16(), nullable=False),
        pa.field("stream_count", pa.int32(), nullable=False),
        # Filled only when the ring is known (a topology was given), else null; the
        # owner's shard count also only where the ring stores it (raft, not gossip).
        pa.field("is_ring_token", pa.bool_()),
        pa.field("owner_shard_count", pa.int32()),
        pa.field("owner", pa.string()),
    ]
)
"""One row per entry, including entries without streams (which have no stream rows)."""


def timestamp_millis(timestamp: datetime) -> int:
    """Milliseconds since the epoch of a generation timestamp (UTC, ms precision), exactly."""
    return to_millis(generation_timestamp(timestamp))


def _row_entries(columns: DescriptionColumns) -> Int64Array:
    """The entry index of every stream row."""
    rows: Int64Array = np.repeat(
        np.arange(columns.entry_count, dtype=np.int64), columns.streams_per_entry()
    )
    return rows


def range_starts(columns: DescriptionColumns) -> Int64Array:
    """Exclusive start of every entry: the previous entry's end; entry 0 wraps to the last."""
    starts: Int64Array = np.roll(columns.range_ends, 1)
    return starts


def flatten_generation(
    columns: DescriptionColumns, timestamp: datetime, generation_id: str
) -> pa.Table:
    """The generation as :data:`STREAMS_SCHEMA` rows, in entry then shard order."""
    count = columns.stream_count
    millis = timestamp_millis(timestamp)
    entry = _row_entries(columns)
    per_entry = columns.streams_per_entry()
    shard = np.arange(count, dtype=np.int64) - columns.offsets[:-1][entry]
    shard_count = per_entry[entry]
    range_end = columns.range_ends[entry]
    range_start = range_starts(columns)[entry]
    ignore = columns.ignore_msb[entry]

    ids, well_formed = columns.id_matrix()
    # Each 16-byte row read as two big-endian words in place: one pass per column.
    tokens = ids.view(">i8")[:, 0].astype(np.int64)
    # A blob that is not 16 bytes maps to the minimum token (cdc/cdc_partitioner.cc).
    tokens[~well_formed] = MIN_TOKEN
    low = ids.view(">u8")[:, 1].astype(np.uint64)
    version = (low & np.uint64(0xF)).astype(np.int8)
    index_bits = ((low >> np.uint64(INDEX_SHIFT)) & np.uint64(MAX_INDEX)).astype(np.int32)
    random_bits = (low >> np.uint64(RANDOM_SHIFT)).astype(np.int64)
    expected, sharding_ok = expected_first_tokens(
        range_start, range_end, shard, shard_count, ignore
    )

    malformed = ~well_formed
    arrays = [
        pa.array(np.full(count, millis, dtype=np.int64)).view(pa.timestamp("ms", tz="UTC")),
        _repeated(generation_id, count),
        pa.array(entry.astype(np.int32)),
        pa.array(range_start),
        pa.array(range_end),
        pa.array(ignore.astype(np.int16)),
        pa.array(shard_count.astype(np.int32)),
        pa.array(shard.astype(np.int32)),
        _binary_array(columns),
        _hex_array(columns),
        pa.array(tokens),
        pa.array(version, mask=malformed),
        pa.array(index_bits, mask=malformed),
        pa.array(random_bits, mask=malformed),
        pa.array(expected, mask=~sharding_ok),
    ]
    return pa.Table.from_arrays(arrays, schema=STREAMS_SCHEMA)


def entries_table(
    columns: DescriptionColumns, nodes: Iterable[Node] | Ring | None = None
) -> pa.Table:
    """The generation's entries as :data:`ENTRIES_SCHEMA` rows.

    With ``nodes`` (the ring the generation was made for), each entry says whether its
    range end is a ring token, which node owns it and that node's shard count (when the
    ring stores one), which is what the checks against the ring compare with.
    """
    entries = columns.entry_count
    unknown = np.ones(entries, dtype=np.bool_)
    is_ring = np.zeros(entries, dtype=np.bool_)
    owner_shards = np.zeros(entries, dtype=np.int32)
    no_shards = np.ones(entries, dtype=np.bool_)
    owner_names: list[str | None] = [None] * entries
    if nodes is not None:
        owners = as_ring(nodes).owners()
        ring = np.array(sorted(owners), dtype=np.int64)
        is_ring = np.isin(columns.range_ends, ring)
        found = [owners.get(end) for end in columns.range_ends.tolist()]
        # A range end of nodes that left is a ring token of no known owner.
        owner_names = [node.name if node and node.state != LEFT else None for node in found]
        owner_shards = np.array(
            [node.shard_count or 0 if node else 0 for node in found], dtype=np.int32
        )
        no_shards = np.array(
            [node is None or node.shard_count is None for node in found], dtype=np.bool_
        )
        unknown = np.zeros(entries, dtype=np.bool_)
    return pa.Table.from_arrays(
        [
            pa.array(np.arange(entries, dtype=np.int32)),
            pa.array(range_starts(columns)),
            pa.array(columns.range_ends.astype(np.int64)),
            pa.array(columns.ignore_msb.astype(np.int16)),
            pa.array(columns.streams_per_entry().astype(np.int32)),
            pa.array(is_ring, mask=unknown),
            pa.array(owner_shards, mask=unknown | no_shards),
            pa.array(owner_names, pa.string()),
        ],
        schema=ENTRIES_SCHEMA,
    )


def stream_id_table(columns: DescriptionColumns) -> pa.Table:
    """Only the ``stream_id`` column of :func:`flatten_generation` (no decoding)."""
    return pa.table({"stream_id": _binary_array(columns)})


def as_ring(nodes: Iterable[Node] | Ring) -> Ring:
    """A ring from either form (core nodes: a topology file, shard counts known)."""
    return nodes if isinstance(nodes, Ring) else Ring.of_nodes(nodes)


def ring_vnode_count(nodes: Iterable[Node] | Ring) -> int:
    """Number of distinct ring tokens: the entry count of an optimal generation."""
    return as_ring(nodes).vnode_count


def _binary_array(columns: DescriptionColumns) -> pa.Array:
    offsets = columns.blob_offsets
    if offsets[-1] < 2**31:
        return pa.Array.from_buffers(
            pa.binary(),
            columns.stream_count,
            [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(columns.blob_data)],
        )
    large = pa.Array.from_buffers(
        pa.large_binary(),
        columns.stream_count,
        [None, pa.py_buffer(offsets), pa.py_buffer(columns.blob_data)],
    )
    return large.cast(pa.binary())


def _hex_array(columns: DescriptionColumns) -> pa.Array:
    """``stream_id_hex``: with 16-byte IDs, the hex of the whole blob buffer (one C
    pass) is already the string column's data, 32 characters a row."""
    if not columns.all_stream_ids_16_bytes():
        return pa.array(columns.stream_hex(), pa.string())
    data = binascii.hexlify(columns.blob_data)
    return _fixed_width_strings(data, 2 * STREAM_ID_SIZE, columns.stream_count)


def _repeated(text: str, count: int) -> pa.Array:
    """``text`` on every row. Built on one buffer: pyarrow's ``take`` would do it, but
    its first call in a process sets up kernels, a cost of its own, and the extract job
    is a first caller."""
    data = text.encode("utf-8")
    return _fixed_width_strings(data * count, len(data), count)


def _fixed_width_strings(data: bytes, width: int, count: int) -> pa.Array:
    """A string column of ``count`` rows of ``width`` bytes each, laid end to end in
    ``data`` (its buffer, not a copy)."""
    if len(data) < 2**31:
        offsets = np.arange(count + 1, dtype=np.int32) * np.int32(width)
        return pa.Array.from_buffers(
            pa.string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
    offsets64 = np.arange(count + 1, dtype=np.int64) * width
    large = pa.Array.from_buffers(
        pa.large_string(), count, [None, pa.py_buffer(offsets64), pa.py_buffer(data)]
    )
    return large.cast(pa.string())
