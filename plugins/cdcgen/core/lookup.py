"""Map millions of partition tokens to their CDC streams at numpy speed.

``TopologyDescription.get_stream`` answers one token at a time in Python; checking that
every row of a CDC log landed in the right stream, or routing a whole batch of base-table
keys, needs millions of answers. :class:`StreamLookup` computes the same answer for a
whole array at once: find the first entry with ``range_end >= token``
(``std::lower_bound`` in ``cdc/metadata.cc``), wrap to entry 0, then the shard of each
token with the entry's shard count and ignore_msb, giving a row of the flat stream array.

Finding the entry is the expensive part. ``np.searchsorted`` over 25,600 range ends costs
a cache-unfriendly binary search per token, so the ring is also cut into equal buckets
(by the high bits of the unbiased token) that each remember the first entry ending in or
after them. A token's entry is then its bucket's entry plus the few range ends between
the bucket start and the token, counted with a handful of vectorized steps. When ring
tokens are clustered (many ends in one bucket) this falls back to ``np.searchsorted``.
Tokens are processed in blocks so temporaries stay in cache and memory stays flat.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cdcgen.core.errors import InvalidToken
from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.stream_id import StreamId
from cdcgen.core.token_arrays import Int64Array, bias_array, unbias_array, zero_based_shard_of_array
from cdcgen.core.tokens import MAX_TOKEN
from cdcgen.core.topology import TopologyDescription

BLOCK_SIZE = 1 << 16
"""Tokens per block: big enough to amortize Python overhead, small enough for the cache."""

MAX_ENDS_PER_BUCKET = 8
"""Above this many range ends in one bucket, counting steps cost more than a binary search."""


class StreamLookup:
    """Vectorized ``get_stream`` over one generation."""

    def __init__(self, description: TopologyDescription) -> None:
        self._set_arrays(GenerationArrays.from_description(description))

    @classmethod
    def from_arrays(cls, arrays: GenerationArrays) -> StreamLookup:
        """Build from arrays directly (e.g. ``build_generation_arrays``), skipping objects."""
        lookup = cls.__new__(cls)
        lookup._set_arrays(arrays)
        return lookup

    def _set_arrays(self, arrays: GenerationArrays) -> None:
        self.arrays = arrays
        ends = np.ascontiguousarray(arrays.range_ends, dtype=np.int64)
        self._range_ends = ends
        self._offsets = np.ascontiguousarray(arrays.offsets[:-1], dtype=np.int64)
        self._shard_counts = arrays.shard_counts.astype(np.uint64)
        # One-shard nodes ignore ignore_msb (dht::sharder); harmless, but be exact.
        self._ignore = np.where(arrays.shard_counts == 1, 0, arrays.ignore_msb).astype(np.uint64)

        # Buckets: about four per entry, at most 2**20 (a 4 MiB table).
        entry_count = ends.shape[0]
        self._bucket_bits = int(min(20, max(8, (4 * entry_count - 1).bit_length())))
        buckets = np.arange(1 << self._bucket_bits, dtype=np.uint64)
        bucket_starts = bias_array(buckets << np.uint64(64 - self._bucket_bits))
        first = np.searchsorted(ends, bucket_starts, side="left")
        counts = np.diff(np.append(first, entry_count))
        self._steps = int(counts.max())
        self._bucket_first = first.astype(np.int32 if entry_count < 2**31 else np.int64)
        # One extra end so a search that ran past the last entry stops there.
        self._padded_ends = np.append(ends, np.int64(MAX_TOKEN))

    def _entries(self, tokens: Int64Array, unbiased: npt.NDArray[np.uint64]) -> Int64Array:
        """First entry with range_end >= token, or len(entries) past the last one."""
        if self._steps > MAX_ENDS_PER_BUCKET:
            found: Int64Array = np.searchsorted(self._range_ends, tokens, side="left")
            return found
        entries = self._bucket_first[unbiased >> np.uint64(64 - self._bucket_bits)]
        for _ in range(self._steps):
            entries += self._padded_ends[entries] < tokens
        result: Int64Array = entries.astype(np.int64)
        return result

    def entry_indices(self, tokens: npt.ArrayLike) -> Int64Array:
        """Index of the entry covering each token (first ``range_end >= token``, wrapping).

        The result has the shape of ``tokens``.
        """
        shape, token_array = _as_tokens(tokens)
        result = np.empty(token_array.shape[0], dtype=np.int64)
        for start in range(0, token_array.shape[0], BLOCK_SIZE):
            block = token_array[start : start + BLOCK_SIZE]
            entries = self._entries(block, unbias_array(block))
            entries[entries == self._range_ends.shape[0]] = 0
            result[start : start + BLOCK_SIZE] = entries
        return result.reshape(shape)

    def stream_indices(self, tokens: npt.ArrayLike) -> Int64Array:
        """Row in ``arrays.stream_bytes`` of the stream each token's writes go to.

        The result has the shape of ``tokens``.
        """
        shape, token_array = _as_tokens(tokens)
        result = np.empty(token_array.shape[0], dtype=np.int64)
        for start in range(0, token_array.shape[0], BLOCK_SIZE):
            block = token_array[start : start + BLOCK_SIZE]
            unbiased = unbias_array(block)
            entries = self._entries(block, unbiased)
            entries[entries == self._range_ends.shape[0]] = 0
            shards = zero_based_shard_of_array(
                unbiased, self._shard_counts[entries], self._ignore[entries]
            )
            result[start : start + BLOCK_SIZE] = self._offsets[entries] + shards.view(np.int64)
        return result.reshape(shape)

    def streams(self, tokens: npt.ArrayLike) -> list[StreamId]:
        """The :class:`StreamId` each token's writes go to (flattened, in token order)."""
        return self.arrays.stream_ids(self.stream_indices(tokens).reshape(-1))


def _as_tokens(tokens: npt.ArrayLike) -> tuple[tuple[int, ...], Int64Array]:
    """The input's shape and its values as a flat int64 array, or InvalidToken."""
    array = np.asarray(tokens)
    shape = array.shape
    flat = array.reshape(-1)
    if flat.dtype == np.int64:
        return shape, flat
    if flat.size and not np.issubdtype(flat.dtype, np.integer):
        raise InvalidToken(f"tokens must be integers, got dtype {flat.dtype}")
    if flat.size and np.issubdtype(flat.dtype, np.unsignedinteger) and int(flat.max()) > MAX_TOKEN:
        raise InvalidToken("tokens must be signed 64-bit values")
    return shape, flat.astype(np.int64)
