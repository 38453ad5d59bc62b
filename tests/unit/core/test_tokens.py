"""Tokens and sharding: ScyllaDB's own test vectors plus independent formulations.

The vectors are ported from ScyllaDB's ``test/boost/partitioner_test.cc``
(``test_murmur3_sharding``, ``test_murmur3_sharding_with_ignorebits``, the
``test_sharding`` helper that also covers ``token_for_next_shard``, and
``test_find_first_token_for_shard``). The property tests compare against formulas written
differently from the code under test: exact fractions for the shard of a token, ceiling
divisions for shard starts, and brute-force scans on rings cut into tiny chunks.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdcgen.core.errors import InvalidSharding, InvalidToken
from cdcgen.core.token_arrays import find_first_token_for_shard_array, shard_of_array
from cdcgen.core.tokens import (
    DEFAULT_IGNORE_MSB,
    MAX_TOKEN,
    MIN_TOKEN,
    bias,
    find_first_token_for_shard,
    shard_of,
    shard_start_table,
    token_for_next_shard,
    unbias,
)

tokens = st.integers(min_value=MIN_TOKEN, max_value=MAX_TOKEN)
shard_counts = st.integers(min_value=1, max_value=300)
ignore_bits = st.integers(min_value=0, max_value=20)


def reference_shard(token: int, shards: int, ignore_msb: int) -> int:
    """The shard as the exact fraction the C++ comment describes: the token's position in
    its chunk (a fraction of the chunk) times the shard count, rounded down.
    """
    if shards == 1:
        return 0
    chunk_width = 1 << (64 - ignore_msb)
    position = Fraction((token - MIN_TOKEN) % chunk_width, chunk_width)
    return int(position * shards)


def reference_first_of_shard_in_chunk(shard: int, shards: int, ignore_msb: int) -> int:
    """Offset in a chunk of a shard's first token: ceil(shard * width / shards)."""
    width = 1 << (64 - ignore_msb)
    return -((-shard * width) // shards)


def reference_next_token(token: int, shard: int, shards: int, ignore_msb: int) -> int | None:
    """Smallest token > ``token`` on ``shard``, given ``token`` is not on it (None: none)."""
    ignore = ignore_msb if shards > 1 else 0
    width = 1 << (64 - ignore)
    offset = token - MIN_TOKEN
    chunk, in_chunk = divmod(offset, width)
    first = reference_first_of_shard_in_chunk(shard, shards, ignore)
    if in_chunk >= first:
        chunk += 1
    if chunk >= 1 << ignore:
        return None
    return MIN_TOKEN + chunk * width + first


# --- ScyllaDB vectors --------------------------------------------------------------------


def check_sharding(shards: int, shard_limits: list[int], ignore_bits: int = 0) -> None:
    """Port of ``test_sharding`` in partitioner_test.cc."""
    count = shards << ignore_bits
    assert len(shard_limits) == count
    for i, limit in enumerate(shard_limits):
        assert shard_of(limit, shards, ignore_bits) == i % shards
        if i != 0:
            assert shard_of(limit - 1, shards, ignore_bits) == (i - 1) % shards
            assert token_for_next_shard(limit - 1, i % shards, shards, ignore_bits) == limit
        if i != count - 1:
            next_shard = (i + 1) % shards
            following = token_for_next_shard(limit, next_shard, shards, ignore_bits)
            assert shard_of(following, shards, ignore_bits) == next_shard


def test_murmur3_sharding_7_shards() -> None:
    check_sharding(
        7,
        [
            -9223372036854775807,
            -6588122883467697006 + 1,
            -3952873730080618204 + 1,
            -1317624576693539402 + 1,
            1317624576693539401 + 1,
            3952873730080618203 + 1,
            6588122883467697005 + 1,
        ],
    )


def test_murmur3_sharding_2_shards() -> None:
    check_sharding(2, [-9223372036854775807, 0])


def test_murmur3_sharding_1_shard() -> None:
    check_sharding(1, [-9223372036854775807])


def test_murmur3_sharding_7_shards_2_ignore_bits() -> None:
    check_sharding(
        7,
        [
            -9223372036854775807,
            -8564559748508006107, -7905747460161236406, -7246935171814466706,
            -6588122883467697005, -5929310595120927305, -5270498306774157604,
            -4611686018427387904, -3952873730080618203, -3294061441733848502,
            -2635249153387078802, -1976436865040309101, -1317624576693539401,
            -658812288346769700, 0, 658812288346769701, 1317624576693539402,
            1976436865040309102, 2635249153387078803, 3294061441733848503,
            3952873730080618204, 4611686018427387904, 5270498306774157605,
            5929310595120927306, 6588122883467697006, 7246935171814466707,
            7905747460161236407, 8564559748508006108,
        ],
        ignore_bits=2,
    )  # fmt: skip


def test_murmur3_sharding_2_shards_4_ignore_bits() -> None:
    check_sharding(
        2,
        [
            -9223372036854775807,
            -8646911284551352320, -8070450532247928832, -7493989779944505344,
            -6917529027641081856, -6341068275337658368, -5764607523034234880,
            -5188146770730811392, -4611686018427387904, -4035225266123964416,
            -3458764513820540928, -2882303761517117440, -2305843009213693952,
            -1729382256910270464, -1152921504606846976, -576460752303423488, 0,
            576460752303423488, 1152921504606846976, 1729382256910270464,
            2305843009213693952, 2882303761517117440, 3458764513820540928,
            4035225266123964416, 4611686018427387904, 5188146770730811392,
            5764607523034234880, 6341068275337658368, 6917529027641081856,
            7493989779944505344, 8070450532247928832, 8646911284551352320,
        ],
        ignore_bits=4,
    )  # fmt: skip


def test_first_tokens_of_shards_from_design_doc() -> None:
    """The design document's list: first token of each of 7 shards (ignore_msb 0)."""
    firsts = [
        -9223372036854775807,
        -6588122883467697005,
        -3952873730080618203,
        -1317624576693539401,
        1317624576693539402,
        3952873730080618204,
        6588122883467697006,
    ]
    for shard, first in enumerate(firsts):
        assert shard_of(first, 7, 0) == shard
        if shard:
            assert shard_of(first - 1, 7, 0) == shard - 1
            assert token_for_next_shard(MIN_TOKEN, shard, 7, 0) == first


def test_find_first_token_for_shard_vectors() -> None:
    """Port of ``test_find_first_token_for_shard`` (3 shards, 10 ignored bits).

    ScyllaDB's minimum token is ``MIN_TOKEN`` here and its maximum token ``MAX_TOKEN``
    (both as range bounds and as the "none found" answer).
    """
    shards, ignore = 3, 10

    def find(start: int, end: int, shard: int) -> int:
        return find_first_token_for_shard(start, end, shard, shards, ignore)

    first_boundary = token_for_next_shard(MIN_TOKEN, 1, shards, ignore)
    second_boundary = token_for_next_shard(MIN_TOKEN, 2, shards, ignore)
    third_boundary = token_for_next_shard(MIN_TOKEN, 0, shards, ignore)
    # Independently: in chunk 0 (2**54 tokens wide) shard s starts at ceil(s * 2**54 / 3),
    # and shard 0 next starts at the beginning of chunk 1.
    assert first_boundary == MIN_TOKEN + -(-(2**54) // 3)
    assert second_boundary == MIN_TOKEN + -(-(2 * 2**54) // 3)
    assert third_boundary == MIN_TOKEN + 2**54

    def next_token(t: int) -> int:
        assert t < MAX_TOKEN
        return t + 1

    def prev_token(t: int) -> int:
        assert t > MIN_TOKEN + 1
        return t - 1

    assert find(MIN_TOKEN, MAX_TOKEN, 0) == MIN_TOKEN + 1
    assert find(MIN_TOKEN, MAX_TOKEN, 1) == first_boundary
    assert find(MIN_TOKEN, MAX_TOKEN, 2) == second_boundary

    assert find(MIN_TOKEN, MIN_TOKEN + 1, 0) == MIN_TOKEN + 1
    assert find(MIN_TOKEN, first_boundary, 1) == first_boundary
    assert find(MIN_TOKEN, second_boundary, 2) == second_boundary

    assert find(prev_token(first_boundary), MAX_TOKEN, 0) == third_boundary
    assert find(first_boundary, MAX_TOKEN, 0) == third_boundary
    assert find(second_boundary, MAX_TOKEN, 0) == third_boundary

    assert find(first_boundary, MAX_TOKEN, 1) == next_token(first_boundary)
    assert find(second_boundary, MAX_TOKEN, 2) == next_token(second_boundary)
    assert find(third_boundary, MAX_TOKEN, 0) == next_token(third_boundary)

    assert find(prev_token(first_boundary), MAX_TOKEN, 1) == first_boundary
    assert find(prev_token(second_boundary), MAX_TOKEN, 2) == second_boundary
    assert find(prev_token(third_boundary), MAX_TOKEN, 0) == third_boundary

    assert find(MIN_TOKEN, prev_token(first_boundary), 1) == prev_token(first_boundary)
    assert find(MIN_TOKEN, prev_token(second_boundary), 2) == prev_token(second_boundary)
    assert find(prev_token(first_boundary), prev_token(third_boundary), 0) == prev_token(
        third_boundary
    )

    last_token = MAX_TOKEN
    last_shard = shard_of(last_token, shards, ignore)

    assert find(prev_token(last_token), MAX_TOKEN, last_shard) == last_token
    assert find(prev_token(last_token), MAX_TOKEN, (last_shard + 1) % shards) == MAX_TOKEN
    assert find(prev_token(last_token), MAX_TOKEN, (last_shard + 2) % shards) == MAX_TOKEN

    assert find(prev_token(last_token), third_boundary, (last_shard + 1) % shards) == MIN_TOKEN + 1
    assert find(prev_token(last_token), third_boundary, (last_shard + 2) % shards) == first_boundary
    assert find(
        prev_token(last_token), prev_token(first_boundary), (last_shard + 2) % shards
    ) == prev_token(first_boundary)


# --- unbias / bias ------------------------------------------------------------------------


def test_unbias_maps_ring_ends() -> None:
    assert unbias(MIN_TOKEN) == 0
    assert unbias(MAX_TOKEN) == 2**64 - 1
    assert unbias(0) == 2**63
    assert unbias(-1) == 2**63 - 1


@given(tokens)
def test_bias_inverts_unbias(token: int) -> None:
    assert bias(unbias(token)) == token


@given(tokens, tokens)
def test_unbias_keeps_order(a: int, b: int) -> None:
    assert (a < b) == (unbias(a) < unbias(b))


def test_out_of_range_tokens_are_errors() -> None:
    with pytest.raises(InvalidToken, match="outside the signed 64-bit range"):
        unbias(MAX_TOKEN + 1)
    with pytest.raises(InvalidToken, match="not an integer"):
        shard_of(True, 2, 0)
    with pytest.raises(InvalidToken):
        bias(2**64)


def test_invalid_sharding_is_an_error() -> None:
    with pytest.raises(InvalidSharding, match="shard count 0"):
        shard_of(0, 0, 0)
    with pytest.raises(InvalidSharding, match="ignore_msb 64"):
        shard_of(0, 2, 64)
    with pytest.raises(InvalidSharding, match="shard 2 does not exist"):
        token_for_next_shard(0, 2, 2, 0)
    with pytest.raises(InvalidSharding, match="do not fit"):
        shard_start_table(3, 63)


# --- shard_of -----------------------------------------------------------------------------


@given(tokens, shard_counts, ignore_bits)
def test_shard_of_matches_exact_fraction(token: int, shards: int, ignore: int) -> None:
    assert shard_of(token, shards, ignore) == reference_shard(token, shards, ignore)


@given(tokens, st.integers(min_value=0, max_value=63))
def test_one_shard_ignores_ignore_msb(token: int, ignore: int) -> None:
    assert shard_of(token, 1, ignore) == 0
    assert shard_of_array(np.array([token]), 1, ignore).tolist() == [0]
    # dht::sharder drops ignore_msb on one shard: there is no "next run" of shard 0.
    assert token_for_next_shard(token, 0, 1, ignore) == MAX_TOKEN


def test_default_ignore_msb_is_scylla_default() -> None:
    assert DEFAULT_IGNORE_MSB == 12


@settings(max_examples=200)
@given(
    st.lists(tokens, min_size=1, max_size=50),
    st.lists(st.integers(min_value=1, max_value=2**40), min_size=1, max_size=50),
    st.lists(st.integers(min_value=0, max_value=63), min_size=1, max_size=50),
)
def test_shard_of_array_matches_python_big_ints(
    token_list: list[int], shard_list: list[int], ignore_list: list[int]
) -> None:
    """Per-element shard counts (up to 2**40, beyond 32 bits) and ignore bits."""
    size = len(token_list)
    shards = [shard_list[i % len(shard_list)] for i in range(size)]
    ignores = [ignore_list[i % len(ignore_list)] for i in range(size)]
    got = shard_of_array(np.array(token_list, dtype=np.int64), np.array(shards), np.array(ignores))
    expected = [
        reference_shard(t, n, g) for t, n, g in zip(token_list, shards, ignores, strict=True)
    ]
    assert got.tolist() == expected


def test_shard_of_array_extremes() -> None:
    extremes = np.array([MIN_TOKEN, MIN_TOKEN + 1, -1, 0, 1, MAX_TOKEN - 1, MAX_TOKEN])
    for shards, ignore in [(2, 0), (7, 0), (7, 2), (64, 12), (255, 16), (2**32 + 1, 3)]:
        expected = [reference_shard(int(t), shards, ignore) for t in extremes]
        assert shard_of_array(extremes, shards, ignore).tolist() == expected


def test_shard_of_array_rejects_bad_input() -> None:
    with pytest.raises(InvalidSharding):
        shard_of_array(np.array([1, 2]), np.array([1, 0]), 0)
    with pytest.raises(InvalidSharding):
        shard_of_array(np.array([1]), 2, 64)
    with pytest.raises(InvalidToken):
        shard_of_array(np.array([1.5]), 2, 0)


# --- shard starts and token_for_next_shard -------------------------------------------------


@given(st.integers(min_value=2, max_value=300), ignore_bits)
def test_shard_start_table_is_ceiling_division(shards: int, ignore: int) -> None:
    table = shard_start_table(shards, ignore)
    assert list(table) == [
        reference_first_of_shard_in_chunk(s, shards, ignore) for s in range(shards)
    ]


@given(tokens, st.data(), shard_counts, ignore_bits)
def test_token_for_next_shard_is_next_token_of_that_shard(
    token: int, data: st.DataObject, shards: int, ignore: int
) -> None:
    """For a token not on ``shard``: the next token of ``shard`` (MAX_TOKEN if none)."""
    shard = data.draw(st.integers(min_value=0, max_value=shards - 1))
    if reference_shard(token, shards, ignore) == shard:
        return
    expected = reference_next_token(token, shard, shards, ignore)
    got = token_for_next_shard(token, shard, shards, ignore)
    assert got == (MAX_TOKEN if expected is None else expected)
    if expected is not None:
        assert reference_shard(got, shards, ignore) == shard
        assert reference_shard(got - 1, shards, ignore) != shard


def test_token_for_next_shard_on_its_own_shard_jumps_to_next_run() -> None:
    """As in ScyllaDB: from inside shard 1's run, the answer is shard 1's next run."""
    shards, ignore = 2, 4
    inside = MIN_TOKEN + 2**59 + 5  # chunk 0, second half: shard 1
    assert shard_of(inside, shards, ignore) == 1
    assert token_for_next_shard(inside, 1, shards, ignore) == MIN_TOKEN + 2**60 + 2**59
    # ignore_msb 0: no later run exists.
    assert token_for_next_shard(0, 1, 2, 0) == MAX_TOKEN


# --- find_first_token_for_shard ------------------------------------------------------------


def brute_force_first(start: int, end: int, shard: int, shards: int, ignore: int) -> int:
    """Scan the range token by token (only for small ranges)."""
    candidates: list[int] | range
    if start < end:
        candidates = range(start + 1, end + 1)
    else:
        candidates = [*range(start + 1, MAX_TOKEN + 1), *range(MIN_TOKEN + 1, end + 1)]
    for token in candidates:
        if reference_shard(token, shards, ignore) == shard:
            return token
    return end


small_ring = st.tuples(
    st.integers(min_value=56, max_value=63),  # chunks of 2**8 .. 2 tokens
    st.integers(min_value=1, max_value=8),
)


@settings(max_examples=400)
@given(
    small_ring,
    st.data(),
    st.one_of(
        tokens,
        st.integers(min_value=MAX_TOKEN - 300, max_value=MAX_TOKEN),
        st.integers(min_value=MIN_TOKEN, max_value=MIN_TOKEN + 300),
    ),
    st.integers(min_value=-300, max_value=300),
)
def test_find_first_matches_brute_force_scan(
    config: tuple[int, int], data: st.DataObject, start: int, length: int
) -> None:
    """Tiny chunks make every shard appear every few tokens, so short ranges (including
    ranges wrapping past MAX_TOKEN, empty ``(T, T]`` excluded) can be scanned in full."""
    ignore, shards = config
    shards = min(shards, 1 << (64 - ignore))
    shard = data.draw(st.integers(min_value=0, max_value=shards - 1))
    end = start + length
    if end > MAX_TOKEN:
        end -= 2**64  # wrap around the ring
    if end < MIN_TOKEN:
        return
    if start >= end and (MAX_TOKEN - start) + (end - MIN_TOKEN) > 700:
        return  # a long wrap-around range: too long to scan
    got = find_first_token_for_shard(start, end, shard, shards, ignore)
    assert got == brute_force_first(start, end, shard, shards, ignore)
    vectorized = find_first_token_for_shard_array([start], [end], [shard], shards, ignore)
    assert vectorized.tolist() == [got]


def reference_first(start: int, end: int, shard: int, shards: int, ignore: int) -> int:
    """The same answer for any range size, from the closed-form next token."""

    def first_after(token: int, limit: int) -> int | None:
        # First token of ``shard`` in (token, limit], or None.
        if token >= limit:
            return None
        candidate: int | None = token + 1
        if reference_shard(token + 1, shards, ignore) != shard:
            candidate = reference_next_token(token + 1, shard, shards, ignore)
        return candidate if candidate is not None and candidate <= limit else None

    if start < end:
        found = first_after(start, end)
        return end if found is None else found
    found = first_after(start, MAX_TOKEN)
    if found is not None:
        return found
    found = first_after(MIN_TOKEN, end)
    return end if found is None else found


@settings(max_examples=400)
@given(tokens, tokens, st.data(), shard_counts, ignore_bits)
def test_find_first_matches_closed_form(
    start: int, end: int, data: st.DataObject, shards: int, ignore: int
) -> None:
    shard = data.draw(st.integers(min_value=0, max_value=shards - 1))
    got = find_first_token_for_shard(start, end, shard, shards, ignore)
    assert got == reference_first(start, end, shard, shards, ignore)


@settings(max_examples=200)
@given(
    st.lists(st.tuples(tokens, tokens), min_size=1, max_size=30),
    shard_counts,
    ignore_bits,
    st.randoms(use_true_random=False),
)
def test_find_first_array_matches_scalar(
    ranges: list[tuple[int, int]], shards: int, ignore: int, rng: random.Random
) -> None:
    # Include each range's degenerate and edge forms.
    edges = [MIN_TOKEN, MIN_TOKEN + 1, MAX_TOKEN - 1, MAX_TOKEN]
    ranges = ranges + [(a, a) for a, _ in ranges] + [(a, b) for a in edges for b in edges]
    starts = [a for a, _ in ranges]
    ends = [b for _, b in ranges]
    shard_list = [rng.randrange(shards) for _ in ranges]
    got = find_first_token_for_shard_array(starts, ends, shard_list, shards, ignore)
    expected = [
        find_first_token_for_shard(a, b, s, shards, ignore)
        for a, b, s in zip(starts, ends, shard_list, strict=True)
    ]
    assert got.tolist() == expected


def test_find_first_in_single_token_ring_is_next_token() -> None:
    """(T, T] is the whole ring; its first token is T + 1 (or MIN_TOKEN + 1 after MAX)."""
    assert find_first_token_for_shard(100, 100, 0, 1, 0) == 101
    assert find_first_token_for_shard(MAX_TOKEN, MAX_TOKEN, 0, 1, 0) == MIN_TOKEN + 1


def test_find_first_returns_end_when_shard_owns_nothing() -> None:
    # (10, 20] lies inside shard 1 of 2 (ignore 0); shard 0 has no token there.
    assert find_first_token_for_shard(10, 20, 0, 2, 0) == 20
    assert find_first_token_for_shard(10, 20, 1, 2, 0) == 11
