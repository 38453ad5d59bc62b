"""Tokens of the Murmur3 ring and how a node's shards divide them.

A port of ScyllaDB's ``dht/token.cc`` (``unbias``, ``bias``, ``zero_based_shard_of``,
``init_zero_based_shard_start``, ``token_for_next_shard``, ``find_first_token_for_shard``).
CDC stream IDs are placed on the ring with these exact functions, so every rounding rule
here must match the C++ bit for bit; ``tests/unit/test_tokens.py`` replays the vectors of
ScyllaDB's ``test/boost/partitioner_test.cc``.

Tokens are plain Python ints in ``[MIN_TOKEN, MAX_TOKEN]`` (signed 64-bit). ScyllaDB also
has two special tokens, "minimum" (before all keys) and "maximum" (after all keys). Here the
minimum token is ``MIN_TOKEN`` (``to_int64`` maps it there too) and "maximum" only appears
as the answer "no such token", which the public functions report as ``MAX_TOKEN``.

The ``*_array`` functions are numpy versions for bulk work (looking up millions of tokens,
building a generation of millions of streams). They use uint64 arithmetic only, splitting
64x64-bit products into 32-bit halves, so nothing overflows or loses precision.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

MIN_TOKEN = -(2**63)
MAX_TOKEN = 2**63 - 1
DEFAULT_IGNORE_MSB = 12
"""ScyllaDB's default ``murmur3_partitioner_ignore_msb_bits``."""

MAX_IGNORE_MSB = 63
"""Shifting a 64-bit token left by 64 or more is meaningless (and undefined in C++)."""

_TWO_64 = 2**64
_MASK_64 = _TWO_64 - 1
_SIGN_BIT = np.uint64(1 << 63)
_LOW_32 = np.uint64(0xFFFF_FFFF)
_32 = np.uint64(32)

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]


class InvalidToken(ValueError):
    """A value that is not a signed 64-bit token."""


class InvalidSharding(ValueError):
    """A shard count, shard number or ignore_msb value no ScyllaDB node could have."""


def check_token(token: int, what: str = "token") -> int:
    """Return ``token`` if it is a signed 64-bit int, else raise :class:`InvalidToken`."""
    if isinstance(token, bool) or not isinstance(token, int):
        raise InvalidToken(f"{what} {token!r} is not an integer")
    if not MIN_TOKEN <= token <= MAX_TOKEN:
        raise InvalidToken(f"{what} {token} is outside the signed 64-bit range")
    return token


def check_sharding(shards: int, ignore_msb: int) -> None:
    """Raise :class:`InvalidSharding` unless ``shards >= 1`` and ``0 <= ignore_msb <= 63``."""
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise InvalidSharding(f"shard count {shards!r} must be an integer >= 1")
    if isinstance(ignore_msb, bool) or not isinstance(ignore_msb, int):
        raise InvalidSharding(f"ignore_msb {ignore_msb!r} is not an integer")
    if not 0 <= ignore_msb <= MAX_IGNORE_MSB:
        raise InvalidSharding(f"ignore_msb {ignore_msb} must be between 0 and {MAX_IGNORE_MSB}")


def _check_shard(shard: int, shards: int) -> None:
    if isinstance(shard, bool) or not isinstance(shard, int) or not 0 <= shard < shards:
        raise InvalidSharding(f"shard {shard!r} does not exist on a node with {shards} shards")


def effective_ignore_msb(shards: int, ignore_msb: int) -> int:
    """ScyllaDB's sharder ignores ``ignore_msb`` on a one-shard node (``dht::sharder``)."""
    return ignore_msb if shards > 1 else 0


def unbias(token: int) -> int:
    """Map a signed token to ``[0, 2**64)`` keeping ring order (``dht/token.cc``)."""
    return (check_token(token) + 2**63) & _MASK_64


def bias(unbiased: int) -> int:
    """Inverse of :func:`unbias`."""
    if not 0 <= unbiased <= _MASK_64:
        raise InvalidToken(f"unbiased token {unbiased} is outside [0, 2**64)")
    return unbiased - 2**63


def _zero_based_shard_of(unbiased: int, shards: int, ignore_msb: int) -> int:
    """``zero_based_shard_of``: the token as a fraction of the ring times ``shards``.

    Shifting out the ``ignore_msb`` high bits cuts the ring into ``2**ignore_msb`` equal
    chunks, each split evenly among the shards (so a shard's tokens are spread out).
    """
    return (((unbiased << ignore_msb) & _MASK_64) * shards) >> 64


def shard_of(token: int, shards: int, ignore_msb: int) -> int:
    """The shard, on a node with ``shards`` shards, that owns ``token``."""
    check_sharding(shards, ignore_msb)
    return _zero_based_shard_of(unbias(token), shards, effective_ignore_msb(shards, ignore_msb))


@lru_cache(maxsize=256)
def shard_start_table(shards: int, ignore_msb: int) -> tuple[int, ...]:
    """``init_zero_based_shard_start``: per shard, its smallest unbiased token in a chunk.

    Cached because every generation asks for the same few (shards, ignore_msb) pairs.
    ``ignore_msb`` must already be the effective one (0 on one-shard nodes).
    """
    check_sharding(shards, ignore_msb)
    if shards == 1:
        return (0,)
    if shards > 1 << (64 - ignore_msb):
        # Some shard would own no token of a chunk and the search below would not end.
        raise InvalidSharding(
            f"{shards} shards do not fit chunks of 2**{64 - ignore_msb} tokens "
            f"(ignore_msb {ignore_msb})"
        )
    starts = []
    for shard in range(shards):
        token = ((shard << 64) // shards) >> ignore_msb
        # Rounding can land slightly before the shard's first token; step forward.
        while _zero_based_shard_of(token, shards, ignore_msb) != shard:
            token += 1
        starts.append(token)
    return tuple(starts)


def _next_token_for_shard(token: int, shard: int, shards: int, ignore_msb: int) -> int | None:
    """``token_for_next_shard`` (one span): smallest token > ``token`` owned by ``shard``.

    ``None`` stands for ScyllaDB's maximum token, "there is none before the ring's end".
    ``ignore_msb`` must already be the effective one.
    """
    unbiased = unbias(token)
    current = _zero_based_shard_of(unbiased, shards, ignore_msb)
    start = shard_start_table(shards, ignore_msb)[shard]
    if ignore_msb == 0:
        if shard <= current:
            return None
        return bias(start)
    chunk_bits = 64 - ignore_msb
    chunk = (unbiased >> chunk_bits) + 1 - (1 if shard > current else 0)
    if chunk >= 1 << ignore_msb:
        return None
    return bias((chunk << chunk_bits) | start)


def token_for_next_shard(token: int, shard: int, shards: int, ignore_msb: int) -> int:
    """The smallest token greater than ``token`` owned by ``shard``, or ``MAX_TOKEN``.

    ``MAX_TOKEN`` stands in for ScyllaDB's "maximum token" (none left on the ring). As in
    ScyllaDB, from a token already on ``shard`` the answer is the start of the shard's
    next run (next chunk), not ``token + 1``; ``find_first_token_for_shard`` only asks
    from tokens off the shard.
    """
    check_sharding(shards, ignore_msb)
    _check_shard(shard, shards)
    found = _next_token_for_shard(token, shard, shards, effective_ignore_msb(shards, ignore_msb))
    return MAX_TOKEN if found is None else found


def _first_in_range(
    start: int, end: int | None, shard: int, shards: int, ignore: int
) -> int | None:
    """``find_first_token_for_shard_in_not_wrap_around_range`` over ``(start, end]``.

    ``end=None`` is the maximum token; a ``None`` result too. ``start < end`` holds.
    """
    first = start + 1
    token = (
        first
        if _zero_based_shard_of(unbias(first), shards, ignore) == shard
        else _next_token_for_shard(first, shard, shards, ignore)
    )
    if token is None:
        return end
    if end is None:
        return token
    return min(token, end)


def find_first_token_for_shard(
    start: int, end: int, shard: int, shards: int, ignore_msb: int
) -> int:
    """The first token of ``shard`` in the ring range ``(start, end]`` (``dht/token.cc``).

    When the range holds no token of the shard the answer is ``end`` itself: that is how
    ScyllaDB picks a stream for a shard that owns nothing in a vnode. A range with
    ``start >= end`` wraps around: it is searched in ``(start, MAX_TOKEN]``, then in
    ``(MIN_TOKEN, end]`` (a ring with one token gives the whole ring ``(T, T]``).
    """
    check_token(start, "range start")
    check_token(end, "range end")
    check_sharding(shards, ignore_msb)
    _check_shard(shard, shards)
    ignore = effective_ignore_msb(shards, ignore_msb)
    if start < end:
        found = _first_in_range(start, end, shard, shards, ignore)
        assert found is not None
        return found
    if start != MAX_TOKEN:
        found = _first_in_range(start, None, shard, shards, ignore)
        if found is not None:
            return found
    found = _first_in_range(MIN_TOKEN, end, shard, shards, ignore)
    assert found is not None
    return found


# --- numpy versions -------------------------------------------------------------------


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
        unbiased, np.full_like(unbiased, shards), np.full_like(unbiased, ignore)
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

    # Wrapping, second part: (MIN, end].
    ring_start = np.full_like(start_a, MIN_TOKEN + 1)
    second, second_none = _first_from_array(ring_start, shard_u, shards, ignore)
    second_result = np.where(second_none | (second > end_a), end_a, second)
    use_first = (start_a != max_token) & ~first_none
    wrap_result = np.where(use_first, first, second_result)

    result: Int64Array = np.where(plain, plain_result, wrap_result)
    return result
