"""Batching, expiry and the V1 rewrite's choice of generations, on plain values.

The rewrite's choice is checked against a literal transcription of ScyllaDB's
``rewrite_streams_descriptions`` (``cdc/generation.cc``: ``std::partition_point`` over
the sorted timestamps, then one step back), over random inputs.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from cdcgen.adapters.writes import batches_by_size
from cdcgen.core.cdc_log import CdcTable, TableRef
from cdcgen.core.retention import (
    CLOCK_DRIFT,
    expirations,
    expiry_time,
    generations_to_rewrite,
    prunable,
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


def test_a_64_shard_generation_goes_in_batches_of_about_256_kilobytes() -> None:
    rows = [(i, [bytes(16)] * 64) for i in range(25_600)]
    batches = batches_by_size(rows)
    assert 120 <= len(batches) <= 150  # 25,600 rows of ~1.3 kB each
    assert max(len(b) for b in batches) <= 200
    assert sum(len(b) for b in batches) == len(rows)


def test_expiry_is_the_superseding_time_plus_the_longest_ttl_plus_drift() -> None:
    tables = [CdcTable(TableRef("ks", "a"), 3600), CdcTable(TableRef("ks", "b"), 86400)]
    assert expiry_time(T0, tables) == T0 + DAY + CLOCK_DRIFT
    assert expiry_time(T0, []) == T0  # no CDC table: nothing can hold its data
    assert expiry_time(T0, [CdcTable(TableRef("ks", "c"), 0)]) is None  # TTL 0: rows never expire
    created_later = CdcTable(TableRef("ks", "d"), 0, created=T0 + HOUR)
    assert expiry_time(T0, [created_later]) == T0  # never held rows of that generation


def test_only_superseded_generations_past_every_ttl_expire_and_never_the_newest() -> None:
    stamps = [T0, T0 + HOUR, T0 + 2 * HOUR]
    tables = [CdcTable(TableRef("ks", "a"), 3600)]
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
    keep = generations_to_rewrite(stamps, [CdcTable(TableRef("ks", "t"), 86400)], now)
    # the generation of T0+8d operated until T0+9d, after the oldest possible row
    assert keep == [T0 + 8 * DAY, T0 + 9 * DAY]
    assert generations_to_rewrite(stamps, [CdcTable(TableRef("ks", "t"), 0)], now) == stamps
    young = CdcTable(TableRef("ks", "t"), 0, created=T0 + 5 * DAY + HOUR)
    assert generations_to_rewrite(stamps, [young], now) == stamps[5:]
    assert generations_to_rewrite(stamps, [], now) == []
    # As ScyllaDB: when partition_point reaches the end it still steps back one, so the
    # newest generation (operating until now) is rewritten even when every table's
    # oldest possible row is younger than its timestamp.
    late = generations_to_rewrite(stamps, [CdcTable(TableRef("ks", "t"), 60)], T0 + 30 * DAY)
    assert late == [stamps[-1]]


def scylla_rewrite_choice(
    timestamps: list[datetime], tables: list[CdcTable], now: datetime
) -> list[datetime]:
    """``rewrite_streams_descriptions`` as written in C++, step by step."""
    tss = sorted(timestamps)

    def no_entries_older_than(table: CdcTable) -> datetime:
        created = table.created or datetime(1970, 1, 1, tzinfo=UTC)  # unknown: the epoch
        ttl = table.ttl_seconds
        bound = created if ttl == 0 else max(created, now - timedelta(seconds=ttl))
        return bound - timedelta(seconds=10)

    def predicate(ts: datetime) -> bool:  # partition_point's: holds for a prefix
        return not any(no_entries_older_than(t) < ts for t in tables)

    first = 0
    while first < len(tss) and predicate(tss[first]):
        first += 1
    if first != 0:
        first -= 1
    if first == len(tss):
        return []
    return tss[first:]


@given(
    st.lists(st.integers(min_value=0, max_value=60), min_size=0, max_size=12, unique=True),
    st.lists(
        st.tuples(
            st.sampled_from([0, 3600, 86_400, 7 * 86_400]),
            st.one_of(st.none(), st.integers(min_value=0, max_value=60)),
        ),
        min_size=1,
        max_size=4,
    ),
    st.integers(min_value=0, max_value=90),
)
def test_rewrite_choice_is_scyllas_partition_point_procedure(
    days: list[int], specs: list[tuple[int, int | None]], now_day: int
) -> None:
    stamps = [T0 + d * DAY for d in days]
    tables = [
        CdcTable(TableRef("ks", f"t{i}"), ttl, None if c is None else T0 + c * DAY + HOUR)
        for i, (ttl, c) in enumerate(specs)
    ]
    now = T0 + now_day * DAY
    assert generations_to_rewrite(stamps, tables, now) == scylla_rewrite_choice(stamps, tables, now)


def test_pruning_takes_long_expired_superseded_generations_a_consumer_is_past() -> None:
    t = [T0 + timedelta(days=d) for d in range(4)]
    published = [
        (t[0], t[1] + timedelta(hours=1)),  # expired long ago
        (t[1], t[2] + timedelta(hours=1)),  # expired long ago
        (t[2], t[3] - timedelta(minutes=1)),  # expired, but only just
        (t[3], None),  # the newest: never
    ]
    now = t[3]
    assert prunable(published, now, timedelta(hours=1)) == [t[0], t[1]]
    assert prunable(published, now, timedelta(0)) == [t[0], t[1], t[2]]
    assert prunable(published, now, timedelta(days=30)) == []
    # A consumer whose watermark is inside t[1]'s span still reads it.
    assert prunable(published, now, timedelta(0), needed_from=t[1] + timedelta(hours=5)) == [t[0]]
    assert prunable(published, now, timedelta(0), needed_from=t[1]) == [t[0]]
    assert prunable([(t[3] - timedelta(days=9), t[0]), (t[3], t[3])], now, timedelta(0)) == [
        t[3] - timedelta(days=9)
    ]  # the newest is kept even when marked
