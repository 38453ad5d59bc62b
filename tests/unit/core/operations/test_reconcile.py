"""ScyllaDB's order of two versions of one cell (compare_atomic_cell_for_merge)."""

from __future__ import annotations

from typing import Any

from cdcgen.core.operations.reconcile import (
    CellVersion,
    compare,
    compare_markers,
    is_live,
    merged,
    shadowed,
    tombstone,
    written,
)

T = 1_700_000_000_000_000  # a write time, in microseconds


def serialized(column: str, key: Any, value: Any) -> bytes:
    """A bigint's CQL bytes: big-endian two's complement (negatives sort above)."""
    return int(value).to_bytes(8, "big", signed=True)


def wins(left: CellVersion, right: CellVersion) -> bool:
    return compare(left, right, "v", serialized) > 0 and compare(right, left, "v", serialized) < 0


def test_the_later_write_wins_whatever_else() -> None:
    assert wins(written(T + 1, 1, None), tombstone(T))
    assert wins(tombstone(T + 1), written(T, 1, 3600))


def test_at_equal_write_times_a_tombstone_wins() -> None:
    assert wins(tombstone(T), written(T, 9, None))
    assert wins(tombstone(T), written(T, 9, 60))


def test_at_equal_write_times_a_cell_with_a_ttl_wins_over_one_without() -> None:
    assert wins(written(T, 1, 60), written(T, 9, None))


def test_of_two_ttls_the_later_expiry_wins_then_the_smaller_ttl() -> None:
    assert wins(written(T, 1, 120), written(T, 9, 60))
    later_second = CellVersion(T, 1, True, 60, T // 1_000_000 + 120)  # written 60 s later
    earlier_second = CellVersion(T, 9, True, 120, T // 1_000_000 + 120)
    assert wins(later_second, earlier_second)


def test_last_the_larger_serialized_value_wins_unsigned() -> None:
    assert wins(written(T, 2, None), written(T, 1, None))
    assert wins(written(T, -1, None), written(T, 5, None))  # 0xff.. above 0x00..
    assert compare(written(T, 5, None), written(T, 5, None), "v", serialized) == 0


def test_two_tombstones_at_one_time_read_alike_and_the_held_one_stays() -> None:
    held = tombstone(T)
    assert compare(tombstone(T), held, "v", serialized) == 0
    assert merged(held, tombstone(T), "v", serialized) is held


def test_a_merge_keeps_the_winner_in_either_order() -> None:
    a, b = written(T, 3, None), written(T, -3, None)
    assert merged(a, b, "v", serialized) == merged(b, a, "v", serialized) == b


def test_markers_have_no_value_to_break_a_tie() -> None:
    assert compare_markers(written(T, None, None), written(T, None, None)) == 0
    assert compare_markers(written(T, None, 60), written(T, None, None)) > 0


def test_a_cell_expires_at_its_expiry_second() -> None:
    cell = written(T, 1, 10)
    second = T // 1_000_000
    assert is_live(cell, second + 9) and not is_live(cell, second + 10)
    assert not is_live(tombstone(T), second)


def test_a_tombstone_deletes_what_was_written_at_or_before_it() -> None:
    assert shadowed(written(T, 1, None), T) and shadowed(written(T - 1, 1, None), T)
    assert not shadowed(written(T + 1, 1, None), T) and not shadowed(written(T, 1, None), None)
