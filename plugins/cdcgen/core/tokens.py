"""Tokens of the Murmur3 ring and how a node's shards divide them.

A port of ScyllaDB's ``dht/token.cc`` (``unbias``, ``bias``, ``zero_based_shard_of``,
``init_zero_based_shard_start``, ``token_for_next_shard``, ``find_first_token_for_shard``).
CDC stream IDs are placed on the ring with these exact functions, so every rounding rule
here must match the C++ bit for bit; ``tests/unit/core/test_tokens.py`` replays the vectors of
ScyllaDB's ``test/boost/partitioner_test.cc``.

Tokens are plain Python ints in ``[MIN_TOKEN, MAX_TOKEN]`` (signed 64-bit). ScyllaDB also
has two special tokens, "minimum" (before all keys) and "maximum" (after all keys). Here the
minimum token is ``MIN_TOKEN`` (``to_int64`` maps it there too) and "maximum" only appears
as the answer "no such token", which the public functions report as ``MAX_TOKEN``.

Numpy versions of these functions, for bulk work, are in :mod:`cdcgen.core.token_arrays`.
"""

from __future__ import annotations

from functools import lru_cache

from cdcgen.core.errors import InvalidSharding, InvalidToken
from cdcgen.core.user_text import echo, parse_decimal

MIN_TOKEN = -(2**63)
MAX_TOKEN = 2**63 - 1
DEFAULT_IGNORE_MSB = 12
"""ScyllaDB's default ``murmur3_partitioner_ignore_msb_bits``."""

MAX_IGNORE_MSB = 63
"""Shifting a 64-bit token left by 64 or more is meaningless (and undefined in C++)."""

MAX_SHARDS = 4096
"""More shards than any node has (ScyllaDB runs one per CPU core): a larger count is a
mistake, and a generation built for it would need gigabytes before anything checked it."""

_TWO_64 = 2**64
_MASK_64 = _TWO_64 - 1


def check_token(token: int, what: str = "token") -> int:
    """Return ``token`` if it is a signed 64-bit int, else raise :class:`InvalidToken`."""
    if isinstance(token, bool) or not isinstance(token, int):
        raise InvalidToken(f"{what} {echo(token)} is not an integer")
    if not MIN_TOKEN <= token <= MAX_TOKEN:
        raise InvalidToken(f"{what} {echo(token)} is outside the signed 64-bit range")
    return token


def parse_token(text: str, what: str = "token") -> int:
    """A token typed as text (ASCII decimal, :func:`cdcgen.core.user_text.parse_decimal`)."""
    try:
        return check_token(parse_decimal(text, what), what)
    except InvalidToken:
        raise
    except ValueError as exc:
        raise InvalidToken(str(exc)) from None


def check_sharding(shards: int, ignore_msb: int) -> None:
    """Raise :class:`InvalidSharding` unless ``1 <= shards <= MAX_SHARDS`` and
    ``0 <= ignore_msb <= 63``."""
    if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
        raise InvalidSharding(
            f"shard count {echo(shards)} must be an integer from 1 to {MAX_SHARDS}"
        )
    if isinstance(ignore_msb, bool) or not isinstance(ignore_msb, int):
        raise InvalidSharding(f"ignore_msb {echo(ignore_msb)} is not an integer")
    if not 0 <= ignore_msb <= MAX_IGNORE_MSB:
        raise InvalidSharding(
            f"ignore_msb {echo(ignore_msb)} must be between 0 and {MAX_IGNORE_MSB}"
        )


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
