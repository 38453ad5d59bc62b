"""Numpy versions of :mod:`cdcgen.core.tokens`, for bulk work.

Looking up millions of tokens, or building a generation of millions of streams, one
Python call per token would take minutes. These functions give the same answers as their
scalar twins (``tests/unit/core/test_tokens.py`` checks them against each other) using uint64
arithmetic only, splitting 64x64-bit products into 32-bit halves, so nothing overflows or
loses precision.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cdcgen.core.errors import InvalidSharding, InvalidToken
from cdcgen.core.tokens import (
    MAX_IGNORE_MSB,
    MAX_TOKEN,
    MIN_TOKEN,
    check_sharding,
    effective_ignore_msb,
    shard_start_table,
)

_SIGN_BIT = np.uint64(1 << 63)
_LOW_32 = np.uint64(0xFFFF_FFFF)
_32 = np.uint64(32)

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]
BoolArray = npt.NDArray[np.bool_]


def _mulhi_u64(a: UInt64Array, b: UInt64Array) -> UInt64Array:
    """High 64 bits of the 128-bit products ``a * b``, from four 32x32-bit products."""
    a_hi, a_lo = a >> _32, a & _LOW_32
    b_hi, b_lo = b >> _32, b & _LOW_32
    lo_lo = a_lo * b_lo
    lo_hi = a_lo * b_hi
    hi_lo = a_hi * b_lo
    middle = (lo_lo >> _32) + (lo_hi & _LOW_32) + (hi_lo & _LOW_32)
    result: UInt64Array = a_hi * b_hi + (lo_hi >> _32) + (hi_lo >> _32) + (middle >> _32)
    return result


def _mulhi_u64_by_u32(a: UInt64Array, b: UInt64Array) -> UInt64Array:
    """:func:`_mulhi_u64` when every ``b`` is below 2**32 (shard counts always are).

    ``a * b = (a_hi * b) * 2**32 + a_lo * b`` with both products below 2**64, and
    ``a_hi * b + (a_lo * b >> 32)`` stays below 2**64 too, so two products suffice.
    """
    result: UInt64Array = ((a >> _32) * b + (((a & _LOW_32) * b) >> _32)) >> _32
    return result


def unbias_array(tokens: Int64Array) -> UInt64Array:
    """Vectorized :func:`unbias`: adding 2**63 modulo 2**64 flips the sign bit."""
    result: UInt64Array = np.ascontiguousarray(tokens, dtype=np.int64).view(np.uint64) ^ _SIGN_BIT
    return result


def bias_array(unbiased: UInt64Array) -> Int64Array:
    """Vectorized :func:`bias`."""
    result: Int64Array = (np.asarray(unbiased, dtype=np.uint64) ^ _SIGN_BIT).view(np.int64)
    return result


def zero_based_shard_of_array(
    unbiased: UInt64Array, shards: UInt64Array, ignore: UInt64Array
) -> UInt64Array:
    """Vectorized ``zero_based_shard_of``; ``ignore`` already effective, all checked."""
    if shards.size and int(shards.max()) < 2**32:
        return _mulhi_u64_by_u32(unbiased << ignore, shards)
    return _mulhi_u64(unbiased << ignore, shards)


def shard_of_array(
    tokens: npt.ArrayLike,
    shards: int | npt.ArrayLike,
    ignore_msb: int | npt.ArrayLike,
) -> Int64Array:
    """Vectorized :func:`shard_of`; ``shards`` and ``ignore_msb`` broadcast against tokens."""
    token_array = np.asarray(tokens)
    if token_array.dtype != np.int64:
        if not np.issubdtype(token_array.dtype, np.integer) and token_array.size:
            raise InvalidToken(f"tokens must be integers, got dtype {token_array.dtype}")
        token_array = token_array.astype(np.int64)
    shard_array = np.asarray(shards, dtype=np.int64)
    ignore_array = np.asarray(ignore_msb, dtype=np.int64)
    if shard_array.size and int(shard_array.min()) < 1:
        raise InvalidSharding(f"shard counts must be >= 1, got {int(shard_array.min())}")
    if ignore_array.size and not (
        int(ignore_array.min()) >= 0 and int(ignore_array.max()) <= MAX_IGNORE_MSB
    ):
        raise InvalidSharding(f"ignore_msb values must be between 0 and {MAX_IGNORE_MSB}")
    ignore_array = np.where(shard_array == 1, 0, ignore_array)
    shard_u64 = np.broadcast_to(shard_array.astype(np.uint64), token_array.shape)
    ignore_u64 = np.broadcast_to(ignore_array.astype(np.uint64), token_array.shape)
    result: Int64Array = zero_based_shard_of_array(
        unbias_array(token_array), shard_u64, ignore_u64
    ).astype(np.int64)
    return result


def _first_from_array(
    tokens: Int64Array, shard: UInt64Array, shards: int, ignore: int
) -> tuple[Int64Array, npt.NDArray[np.bool_]]:
    """Per element: ``tokens`` if on ``shard``, else ``token_for_next_shard``.

    Returns the candidate tokens and a mask of "none before the ring's end" (maximum).
    """
    unbiased = unbias_array(tokens)
    current = zero_based_shard_of_array(
        unbiased, np.asarray(shards, dtype=np.uint64), np.asarray(ignore, dtype=np.uint64)
    )
    on_shard = current == shard
    table = np.array(shard_start_table(shards, ignore), dtype=np.uint64)
    starts = table[shard.astype(np.intp)]
    if ignore == 0:
        none = shard <= current
        candidate = starts
    else:
        chunk_bits = np.uint64(64 - ignore)
        # ScyllaDB's chunk + 1 - (shard > current), kept non-negative in uint64.
        chunk = (unbiased >> chunk_bits) + (shard <= current).astype(np.uint64)
        none = chunk >= np.uint64(1 << ignore)
        chunk = np.where(none, np.uint64(0), chunk)
        candidate = (chunk << chunk_bits) | starts
    next_tokens = bias_array(candidate)
    found: Int64Array = np.where(on_shard, tokens, next_tokens)
    return found, ~on_shard & none


def find_first_token_for_shard_array(
    start: npt.ArrayLike,
    end: npt.ArrayLike,
    shard: npt.ArrayLike,
    shards: int,
    ignore_msb: int,
) -> Int64Array:
    """Vectorized :func:`find_first_token_for_shard` for one node configuration.

    ``start``, ``end`` and ``shard`` broadcast together; used to build whole generations
    at numpy speed. Agrees with the scalar function on every input (property-tested).
    """
    check_sharding(shards, ignore_msb)
    ignore = effective_ignore_msb(shards, ignore_msb)
    start_a, end_a, shard_a = np.broadcast_arrays(
        np.asarray(start, dtype=np.int64),
        np.asarray(end, dtype=np.int64),
        np.asarray(shard, dtype=np.int64),
    )
    if shard_a.size and not (int(shard_a.min()) >= 0 and int(shard_a.max()) < shards):
        raise InvalidSharding(f"shards must be between 0 and {shards - 1}")
    shard_u = shard_a.astype(np.uint64)
    max_token = np.int64(MAX_TOKEN)

    # Not wrapping (start < end): search (start, end].  Wrapping, first part: (start, MAX].
    after_start = start_a.copy()
    after_start[start_a != max_token] += 1
    first, first_none = _first_from_array(after_start, shard_u, shards, ignore)
    plain = start_a < end_a
    plain_result = np.where(first_none | (first > end_a), end_a, first)

    # Wrapping, second part: (MIN, end]. From a fixed start it depends on the shard
    # alone, so it is worked out once per shard, not once per element.
    every_shard = np.arange(shards, dtype=np.uint64)
    ring_start = np.full(shards, MIN_TOKEN + 1, dtype=np.int64)
    second_by_shard, none_by_shard = _first_from_array(ring_start, every_shard, shards, ignore)
    shard_index = shard_a.astype(np.intp)
    second, second_none = second_by_shard[shard_index], none_by_shard[shard_index]
    second_result = np.where(second_none | (second > end_a), end_a, second)
    use_first = (start_a != max_token) & ~first_none
    wrap_result = np.where(use_first, first, second_result)

    result: Int64Array = np.where(plain, plain_result, wrap_result)
    return result


def expected_first_tokens(
    range_start: npt.ArrayLike,
    range_end: npt.ArrayLike,
    shard: npt.ArrayLike,
    shard_count: npt.ArrayLike,
    ignore_msb: npt.ArrayLike,
) -> tuple[Int64Array, BoolArray]:
    """``find_first_token_for_shard`` per row, each row with its own shard count/ignore_msb.

    The core's :func:`find_first_token_for_shard_array` takes one node configuration; a
    generation mixes a few (nodes with different shard counts), so rows are grouped by
    configuration and each group is one vectorized call. Returns the tokens and a mask
    of rows whose configuration is possible (``shard_count >= 1``, ``0 <= ignore_msb <=
    63``, at most ``2**(64 - ignore_msb)`` shards, ``0 <= shard < shard_count``); other
    rows hold 0 and must be ignored.
    """
    start, end, shard_a, count, ignore = np.broadcast_arrays(
        *(
            np.asarray(a, dtype=np.int64)
            for a in (range_start, range_end, shard, shard_count, ignore_msb)
        )
    )
    result = np.zeros(start.shape, dtype=np.int64)
    bits = 64 - np.clip(ignore, 0, MAX_IGNORE_MSB)
    # Each of the 2**ignore_msb chunks must hold a token of every shard (the core refuses
    # more shards than a chunk has tokens: some shard would own nothing at all).
    fits = (count == 1) | (bits >= 62) | (count <= np.left_shift(1, np.minimum(bits, 61)))
    valid = (
        (count >= 1)
        & (ignore >= 0)
        & (ignore <= MAX_IGNORE_MSB)
        & fits
        & (shard_a >= 0)
        & (shard_a < count)
    )
    if not valid.any():
        return result, valid
    if valid.all() and (count == count.flat[0]).all() and (ignore == ignore.flat[0]).all():
        # One configuration (the common generation): no grouping, no gathers (a good
        # part of the general path's time).
        shards, ignore_msb = int(count.flat[0]), int(ignore.flat[0])
        return find_first_token_for_shard_array(start, end, shard_a, shards, ignore_msb), valid
    rows = np.flatnonzero(valid.ravel())
    # One key per configuration; ignore_msb < 64 fits in the low 6 bits.
    keys = (count.ravel()[rows] << 6) | ignore.ravel()[rows]
    configs, inverse = np.unique(keys, return_inverse=True)
    flat = result.ravel()
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(configs.shape[0] + 1))
    for position, key in enumerate(configs.tolist()):
        group = rows[order[bounds[position] : bounds[position + 1]]]
        flat[group] = find_first_token_for_shard_array(
            start.ravel()[group],
            end.ravel()[group],
            shard_a.ravel()[group],
            key >> 6,
            key & 0x3F,
        )
    return flat.reshape(start.shape), valid
