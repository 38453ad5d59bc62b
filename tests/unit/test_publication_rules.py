"""Batching, expiry and the V1 rewrite's "too old" rule, on plain values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from cdcgen.adapters.publication_rules import (
    CLOCK_DRIFT,
    CdcTable,
    batches_by_size,
    expirations,
    expiry_time,
    generations_to_rewrite,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


@given(
    st.lists(st.integers(min_value=0, max_value=300), max_size=200),
    st.integers(min_value=200, max_value=20_000),
)
def test_batches_keep_every_row_in_order_and_respect_the_size(
    counts: list[int], limit: int
) -> None:
    rows = [(i, [bytes(16)] * n) for i, n in enumerate(counts)]
    batches = batches_by_size(rows, limit)
    assert [row for batch in batches for row in batch] == rows
    for batch in batches:
        size = sum(64 + 20 * len(streams) for _, streams in batch)
        assert size <= limit or len(batch) == 1  # only a single oversized row may exceed


def test_a_64_shard_generation_goes_in_batches_of_about_a_megabyte() -> None:
    rows = [(i, [bytes(16)] * 64) for i in range(25_600)]
    batches = batches_by_size(rows)
    assert 20 <= len(batches) <= 40
    assert max(len(b) for b in batches) < 1000


def test_expiry_is_the_superseding_time_plus_the_longest_ttl_plus_drift() -> None:
    tables = [CdcTable("ks.a", 3600), CdcTable("ks.b", 86400)]
    assert expiry_time(T0, tables) == T0 + DAY + CLOCK_DRIFT
    assert expiry_time(T0, []) == T0  # no CDC table: nothing can hold its data
    assert expiry_time(T0, [CdcTable("ks.c", 0)]) is None  # TTL 0: rows never expire
    created_later = CdcTable("ks.d", 0, created=T0 + HOUR)
    assert expiry_time(T0, [created_later]) == T0  # never held rows of that generation


def test_only_superseded_generations_past_every_ttl_expire_and_never_the_newest() -> None:
    stamps = [T0, T0 + HOUR, T0 + 2 * HOUR]
    tables = [CdcTable("ks.a", 3600)]
    now = T0 + 2 * HOUR + HOUR + CLOCK_DRIFT  # second generation superseded long enough
    marked = expirations(stamps, tables, now)
    assert [(e.timestamp, e.expired) for e in marked] == [
        (T0, T0 + 2 * HOUR + CLOCK_DRIFT),
        (T0 + HOUR, T0 + 3 * HOUR + CLOCK_DRIFT),
    ]
    assert [e.timestamp for e in expirations(stamps, tables, now - timedelta(seconds=1))] == [T0]
    assert expirations([T0], tables, T0 + 10 * DAY) == []


def test_rewrite_keeps_the_generation_operating_when_the_oldest_row_was_written() -> None:
    # One table, 1 day TTL, now = T0 + 10 days: rows exist from T0 + 9 days - 10 s on.
    stamps = [T0 + d * DAY for d in range(10)]
    now = T0 + 10 * DAY
    keep = generations_to_rewrite(stamps, [CdcTable("ks.t", 86400)], now)
    # the generation of T0+8d operated until T0+9d, after the oldest possible row
    assert keep == [T0 + 8 * DAY, T0 + 9 * DAY]
    assert generations_to_rewrite(stamps, [CdcTable("ks.t", 0)], now) == stamps
    young = CdcTable("ks.t", 0, created=T0 + 5 * DAY + HOUR)
    assert generations_to_rewrite(stamps, [young], now) == stamps[5:]
    assert generations_to_rewrite(stamps, [], now) == []
    # As ScyllaDB (partition_point reaches the end): with every bound past the last
    # timestamp nothing is rewritten, not even the last generation.
    assert generations_to_rewrite(stamps, [CdcTable("ks.t", 60)], T0 + 30 * DAY) == []
