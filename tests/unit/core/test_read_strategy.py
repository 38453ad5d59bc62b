"""Which strategy a changes job reads with, and the token ranges a scan covers."""

from __future__ import annotations

from itertools import pairwise

import pytest

from cdcgen.changes.settings import ChangesSettings
from cdcgen.core.read_strategy import JobShape, ReadStrategy, choose_read, job_shape
from cdcgen.core.token_ranges import TokenRange, ring_ranges
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN

AUTO, STREAMS, RANGES = ReadStrategy.AUTO, ReadStrategy.STREAMS, ReadStrategy.RANGES


def shape(reads: int, read: int = 8, total: int = 8, *, disjoint: bool = True) -> JobShape:
    return JobShape(reads, read, total, disjoint)


def test_auto_scans_from_the_threshold_on() -> None:
    assert choose_read(AUTO, shape(1023), ranges_from=1024) is STREAMS
    assert choose_read(AUTO, shape(1024), ranges_from=1024) is RANGES


def test_auto_reads_streams_when_the_job_covers_few_buckets() -> None:
    # A job of 2 of 8 buckets would scan (and drop) the other 6 buckets' rows.
    assert choose_read(AUTO, shape(10_000, read=2, total=8), ranges_from=1024) is STREAMS
    assert choose_read(AUTO, shape(10_000, read=4, total=8), ranges_from=1024) is RANGES


def test_a_forced_strategy_wins_unless_windows_overlap() -> None:
    assert choose_read(RANGES, shape(1, read=1), ranges_from=1024) is RANGES
    assert choose_read(STREAMS, shape(10_000), ranges_from=1024) is STREAMS
    assert choose_read(RANGES, shape(10_000, disjoint=False), ranges_from=1) is STREAMS
    assert choose_read(RANGES, shape(0), ranges_from=1) is STREAMS


def test_job_shape_counts_buckets_per_generation() -> None:
    got = job_shape([("g1", 0), ("g1", 1), ("g2", 0), ("g1", 0)], 40, 4, disjoint=True)
    assert got == JobShape(40, 3, 8, True)
    assert got.bucket_share == 3 / 8


def covers_ring(ranges: list[TokenRange]) -> bool:
    edges = [(r.low, r.high) for r in ranges]
    chained = all(a[1] == b[0] for a, b in pairwise(edges))
    return chained and edges[0][0] == MIN_TOKEN and edges[-1][1] == MAX_TOKEN


def test_ring_ranges_cut_at_the_ring_and_cover_it() -> None:
    ranges = ring_ranges([100, -5, 100, 7])
    assert [(r.low, r.high) for r in ranges] == [
        (MIN_TOKEN, -5),
        (-5, 7),
        (7, 100),
        (100, MAX_TOKEN),
    ]
    split = ring_ranges([0], at_least=8)
    assert len(split) == 8 and covers_ring(split)
    assert all(r.high <= 0 or r.low >= 0 for r in split)  # never across a ring token
    assert covers_ring(ring_ranges([], at_least=3))


def test_a_token_range_is_never_empty() -> None:
    with pytest.raises(ValueError):
        TokenRange(5, 5)
    assert TokenRange(0, 2).split(10) == [TokenRange(0, 1), TokenRange(1, 2)]


def test_the_setting_reads_the_environment() -> None:
    settings = ChangesSettings.from_env(
        {"CDCGEN_CHANGES_READ": " Ranges ", "CDCGEN_CHANGES_RANGES_FROM": "10"}
    )
    assert settings.read_strategy is RANGES and settings.ranges_from == 10
    assert ChangesSettings.from_env({}).read_strategy is AUTO
