"""A generation as flat numpy arrays, and a vectorized ``make_generation``.

A large cluster's generation has millions of streams (100 nodes x 256 vnodes x 64 shards
is 1.6 million). Building or holding them as Python objects costs seconds and gigabytes;
as arrays it costs milliseconds and 16 bytes a stream. :class:`GenerationArrays` is that
layout (also what :class:`cdcgen.core.lookup.StreamLookup` searches), convertible both
ways to :class:`~cdcgen.core.topology.TopologyDescription`.

:func:`build_generation_arrays` gives exactly the streams of
:func:`cdcgen.core.topology.make_generation` for the same nodes and the same seeded
generator: same tokens (``find_first_token_for_shard_array``), same indices, and the
random bits drawn in the same order (``rng.getrandbits(38)`` per stream, entry by entry,
shard by shard). ``tests/unit/core/test_lookup.py`` checks that equality.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cdcgen.core.errors import InvalidDescription
from cdcgen.core.stream_id import (
    INDEX_SHIFT,
    RANDOM_BITS,
    RANDOM_SHIFT,
    STREAM_ID_SIZE,
    VERSION_1,
    StreamId,
)
from cdcgen.core.token_arrays import Int64Array, find_first_token_for_shard_array
from cdcgen.core.topology import Node, TokenRange, TopologyDescription, generation_ring
from cdcgen.core.topology_json import DescriptionJson, EntryJson

ByteMatrix = npt.NDArray[np.uint8]

_BLOCK_ROWS = 1 << 17


@dataclass(frozen=True, eq=False)
class GenerationArrays:
    """A topology description as arrays; entry ``i``'s streams are rows
    ``offsets[i]:offsets[i + 1]`` of ``stream_bytes`` (one 16-byte ID per row, shard order).
    """

    range_ends: Int64Array
    shard_counts: Int64Array
    ignore_msb: Int64Array
    offsets: Int64Array
    stream_bytes: ByteMatrix

    def __post_init__(self) -> None:
        entries = self.range_ends.shape[0] if self.range_ends.ndim == 1 else -1
        if entries < 1:
            raise InvalidDescription("range_ends must be a non-empty one-dimensional array")
        for name in ("shard_counts", "ignore_msb"):
            if getattr(self, name).shape != (entries,):
                raise InvalidDescription(f"{name} must have one value per entry ({entries})")
        if self.offsets.shape != (entries + 1,) or int(self.offsets[0]) != 0:
            raise InvalidDescription("offsets must start at 0 and have one value per entry + 1")
        if np.any(self.range_ends[1:] <= self.range_ends[:-1]):  # np.diff would overflow
            raise InvalidDescription("range ends must be strictly increasing")
        if np.any(self.shard_counts < 1) or np.any(np.diff(self.offsets) != self.shard_counts):
            raise InvalidDescription("each entry needs shard_counts[i] >= 1 streams at offsets[i]")
        if np.any(self.ignore_msb < 0) or np.any(self.ignore_msb > 63):
            raise InvalidDescription("ignore_msb values must be between 0 and 63")
        if self.stream_bytes.shape != (int(self.offsets[-1]), STREAM_ID_SIZE):
            raise InvalidDescription(
                f"stream_bytes must be a ({int(self.offsets[-1])}, 16) byte matrix"
            )

    @property
    def entry_count(self) -> int:
        return int(self.range_ends.shape[0])

    @property
    def stream_count(self) -> int:
        return int(self.stream_bytes.shape[0])

    def stream_tokens(self) -> Int64Array:
        """Token of every stream (bytes 0..7, big-endian signed)."""
        tokens: Int64Array = (
            np.ascontiguousarray(self.stream_bytes[:, :8]).view(">i8").reshape(-1).astype(np.int64)
        )
        return tokens

    def stream_ids(self, rows: npt.ArrayLike) -> list[StreamId]:
        """The :class:`StreamId` objects of the given rows."""
        chosen = np.ascontiguousarray(self.stream_bytes[np.asarray(rows, dtype=np.intp)])
        raw = chosen.tobytes()
        return [StreamId(raw[i : i + STREAM_ID_SIZE]) for i in range(0, len(raw), STREAM_ID_SIZE)]

    @classmethod
    def from_description(cls, description: TopologyDescription) -> GenerationArrays:
        entries = description.entries
        counts = np.array([len(entry.streams) for entry in entries], dtype=np.int64)
        offsets = np.zeros(len(entries) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        raw = b"".join(stream.raw for stream in description.streams())
        return cls(
            range_ends=np.array(description.range_ends, dtype=np.int64),
            shard_counts=counts,
            ignore_msb=np.array([e.sharding_ignore_msb for e in entries], dtype=np.int64),
            offsets=offsets,
            stream_bytes=np.frombuffer(raw, dtype=np.uint8).reshape(-1, STREAM_ID_SIZE).copy(),
        )

    def description_json(self) -> DescriptionJson:
        """Same as ``description_to_json(self.to_description())``, without the objects."""
        hex_digits = np.ascontiguousarray(self.stream_bytes).tobytes().hex()
        width = 2 * STREAM_ID_SIZE
        offsets = self.offsets.tolist()
        ends = self.range_ends.tolist()
        ignores = self.ignore_msb.tolist()
        return DescriptionJson(
            entries=[
                EntryJson(
                    token_range_end=ends[i],
                    sharding_ignore_msb=ignores[i],
                    streams=[
                        hex_digits[row * width : (row + 1) * width]
                        for row in range(offsets[i], offsets[i + 1])
                    ],
                )
                for i in range(len(ends))
            ]
        )

    def to_description(self) -> TopologyDescription:
        raw = np.ascontiguousarray(self.stream_bytes).tobytes()
        offsets = self.offsets.tolist()
        entries = []
        for i, (end, ignore) in enumerate(
            zip(self.range_ends.tolist(), self.ignore_msb.tolist(), strict=True)
        ):
            streams = tuple(
                StreamId(raw[row * STREAM_ID_SIZE : (row + 1) * STREAM_ID_SIZE])
                for row in range(offsets[i], offsets[i + 1])
            )
            entries.append(TokenRange(end, streams, ignore))
        return TopologyDescription(tuple(entries))


def build_generation_arrays(nodes: Sequence[Node], rng: random.Random) -> GenerationArrays:
    """Vectorized :func:`cdcgen.core.topology.make_generation` (identical output)."""
    owners, tokens = generation_ring(nodes)
    ends = np.array(tokens, dtype=np.int64)
    starts = np.roll(ends, 1)  # entry 0 wraps: (T_last, T_0]
    shard_counts = np.array([owners[t].shard_count for t in tokens], dtype=np.int64)
    ignore_msb = np.array([owners[t].ignore_msb for t in tokens], dtype=np.int64)
    offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(shard_counts, out=offsets[1:])
    total = int(offsets[-1])

    stream_tokens = np.empty(total, dtype=np.int64)
    configs = np.unique(np.stack([shard_counts, ignore_msb], axis=1), axis=0)
    for shards, ignore in configs.tolist():
        entries = np.flatnonzero((shard_counts == shards) & (ignore_msb == ignore))
        entry_of_row = np.repeat(entries, shards)
        shard_of_row = np.tile(np.arange(shards, dtype=np.int64), entries.shape[0])
        for block in range(0, entry_of_row.shape[0], _BLOCK_ROWS):  # bounds temporaries
            entry = entry_of_row[block : block + _BLOCK_ROWS]
            shard = shard_of_row[block : block + _BLOCK_ROWS]
            stream_tokens[offsets[entry] + shard] = find_first_token_for_shard_array(
                starts[entry], ends[entry], shard, shards, ignore
            )

    draw = rng.getrandbits
    randoms = np.fromiter((draw(RANDOM_BITS) for _ in range(total)), dtype=np.uint64, count=total)
    indices = np.repeat(np.arange(len(tokens), dtype=np.uint64), shard_counts)
    low_qwords = (
        np.uint64(VERSION_1)
        | (indices << np.uint64(INDEX_SHIFT))
        | (randoms << np.uint64(RANDOM_SHIFT))
    )
    stream_bytes = np.empty((total, STREAM_ID_SIZE), dtype=np.uint8)
    stream_bytes[:, :8] = stream_tokens.astype(">i8").view(np.uint8).reshape(total, 8)
    stream_bytes[:, 8:] = low_qwords.astype(">u8").view(np.uint8).reshape(total, 8)
    return GenerationArrays(ends, shard_counts, ignore_msb, offsets, stream_bytes)
