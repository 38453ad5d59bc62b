"""Lake buckets: ring slices by the log partitioner's token, or the first layout's CRC-32."""

from __future__ import annotations

import zlib
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from cdcgen.core.lake_buckets import BucketRule, LakeBuckets
from cdcgen.core.stream_id import StreamId, cdc_partitioner_token
from cdcgen.core.token_ranges import TokenRange
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN

streams = st.binary(min_size=16, max_size=16).map(
    lambda raw: StreamId(raw[:15] + bytes([raw[15] & 0xF0 | 1]))
)
tokens = st.integers(MIN_TOKEN + 1, MAX_TOKEN)


@given(streams, st.integers(1, 64))
def test_every_rule_puts_a_stream_in_one_stable_bucket(stream: StreamId, count: int) -> None:
    for rule in BucketRule:
        buckets = LakeBuckets(count, rule)
        assert 0 <= buckets.of(stream) < count
        assert buckets.of(stream) == buckets.of(StreamId(bytes(stream.raw)))


@given(streams, st.integers(1, 64))
def test_crc32_buckets_are_those_of_the_first_layout(stream: StreamId, count: int) -> None:
    """Lakes written before the ring rule keep their buckets: CRC-32 modulo the count."""
    assert LakeBuckets(count, BucketRule.CRC32).of(stream) == zlib.crc32(stream.raw) % count


@given(tokens, tokens, st.integers(1, 64))
def test_ring_buckets_are_ordered_slices_of_the_ring(a: int, b: int, count: int) -> None:
    buckets = LakeBuckets(count)
    low, high = sorted((a, b))
    assert buckets.of_token(low) <= buckets.of_token(high)
    assert buckets.of_token(MIN_TOKEN + 1) == 0
    assert buckets.of_token(MAX_TOKEN) == count - 1


@given(st.integers(1, 300))
def test_ring_slices_are_the_buckets_in_order(count: int) -> None:
    buckets = LakeBuckets(count)
    slices = buckets.ring_slices
    assert slices is not None and len(slices) == count
    assert slices[0].low == MIN_TOKEN and slices[-1].high == MAX_TOKEN
    assert all(a.high == b.low for a, b in pairwise(slices))
    for k, piece in enumerate(slices):
        assert buckets.of_token(piece.low + 1) == buckets.of_token(piece.high) == k
    # equal shares of 2**64 token values (the last short of the one past MAX_TOKEN)
    widths = [p.high - p.low for p in slices[:-1]] + [slices[-1].high + 1 - slices[-1].low]
    assert max(widths) - min(widths) <= 1
    assert LakeBuckets(count, BucketRule.CRC32).ring_slices is None


@given(tokens, tokens, st.integers(1, 16))
def test_ranges_cut_at_the_slices_stay_in_one_bucket(a: int, b: int, count: int) -> None:
    if a == b:
        return
    whole = TokenRange(min(a, b), max(a, b))
    buckets = LakeBuckets(count)
    pieces = whole.cut(s.high for s in buckets.ring_slices or ())
    assert pieces[0].low == whole.low and pieces[-1].high == whole.high
    assert all(p.high == q.low for p, q in pairwise(pieces))
    for piece in pieces:
        assert buckets.of_token(piece.low + 1) == buckets.of_token(piece.high)


@given(st.lists(streams, min_size=2, max_size=50), st.integers(1, 16))
def test_scylla_log_buckets_follow_the_stream_tokens(ids: list[StreamId], count: int) -> None:
    """With the CDC partitioner (the default), a scan in token order meets buckets in order."""
    buckets = LakeBuckets(count)
    ordered = sorted(ids, key=lambda s: cdc_partitioner_token(s.raw))
    seen = [buckets.of(s) for s in ordered]
    assert seen == sorted(seen)
