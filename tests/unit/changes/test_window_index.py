"""Placing scanned rows: stream and time to the planned read, exactly as per-stream reads."""

from __future__ import annotations

import numpy as np
import pytest

from cdcgen.changes.errors import OverlappingReads
from cdcgen.changes.stream_reads import StreamRead
from cdcgen.changes.window_index import DROPPED, WindowIndex, stream_keys

A, B, C = bytes([1] * 16), bytes([2] * 16), bytes([3] * 16)


def read(stream: bytes, start_ms: int, end_ms: int, window: str, bucket: int = 0) -> StreamRead:
    return StreamRead(stream, start_ms, end_ms, "g1", window, bucket)


def placements(index: WindowIndex, rows: list[tuple[bytes, int]]) -> list[object]:
    codes = index.assign(
        stream_keys([s for s, _ in rows]), np.array([t for _, t in rows], dtype=np.int64)
    )
    return [None if c == DROPPED else index.placements[c] for c in codes]


def test_rows_go_to_their_streams_window_and_bounds_are_half_open() -> None:
    index = WindowIndex.of([read(A, 10, 20, "wA", 0), read(B, 15, 30, "wB", 1)])
    got = placements(
        index,
        [
            (A, 10_000),  # the start, inclusive
            (A, 19_999),
            (A, 20_000),  # the end, exclusive
            (A, 9_999),  # before the window (a later bucket start): dropped
            (B, 10_000),  # B's window starts later
            (B, 29_999),
            (C, 12_000),  # a stream of no read: dropped
        ],
    )
    assert got == [
        ("g1", "wA", 0),
        ("g1", "wA", 0),
        None,
        None,
        None,
        ("g1", "wB", 1),
        None,
    ]
    assert (index.low_us, index.high_us) == (10_000, 30_000)


def test_a_stream_with_several_windows_is_placed_by_time() -> None:
    index = WindowIndex.of([read(A, 30, 40, "late"), read(A, 10, 20, "early"), read(B, 0, 5, "b")])
    got = placements(index, [(A, 35_000), (A, 15_000), (A, 25_000), (B, 1_000)])
    assert [p if p is None else p[1] for p in got] == ["late", "early", None, "b"]


def test_overlapping_windows_of_a_stream_are_refused() -> None:
    with pytest.raises(OverlappingReads):
        WindowIndex.of([read(A, 10, 20, "one"), read(A, 19, 30, "two")])
    WindowIndex.of([read(A, 10, 20, "one"), read(B, 15, 30, "two")])  # other streams may


def test_no_reads_place_nothing() -> None:
    index = WindowIndex.of([])
    assert placements(index, [(A, 1)]) == [None]
