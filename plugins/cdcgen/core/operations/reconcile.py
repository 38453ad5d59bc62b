"""Which of two versions of one cell a replica keeps, as ScyllaDB decides it.

ScyllaDB's ``compare_atomic_cell_for_merge`` (``mutation/atomic_cell.cc``), in order:

1. the larger write timestamp wins;
2. at equal timestamps a dead cell (a tombstone) wins over a live one;
3. of two live cells, one with a TTL wins over one without (it becomes a tombstone
   later: CASSANDRA-14592);
4. of two cells with a TTL, the later expiry wins, and at equal expiries the smaller
   TTL (the one written later: ScyllaDB's extension; Apache Cassandra 5 goes straight
   to the values here);
5. last, the larger value wins, compared as unsigned bytes of its CQL serialization.

Of two dead cells the later deletion time wins; the log does not carry it, and both
read as no value, so the one held is kept. A row marker follows the same order without
the value (``compare_row_marker_for_merge``).

The comparison ignores the clock: a cell whose TTL has run out still merges as a live
cell with a TTL, and reads as dead (:func:`is_live`). The sink's replay leaves all this
to the sink's database (each statement carries the write time); a mirror resolves it
itself, here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdcgen.core.frozen import frozen_value
from cdcgen.core.operations.ttl_expiry import expiry_second

#: A cell value's CQL serialization (what ties are broken on), given its column and,
#: for a collection's or user type's cell, its element, map or list key or field name.
Serialized = Callable[[str, Any, Any], bytes]


@frozen_value
class CellVersion:
    """One version of a cell, or of a row marker (``value`` unused): written at
    ``write_time_us``; ``live`` False: a tombstone; ``ttl`` and ``expiry_s`` (the
    second it stops being live) for a live cell written with a TTL."""

    write_time_us: int
    value: Any = None
    live: bool = True
    ttl: int | None = None
    expiry_s: int | None = None


def written(write_time_us: int, value: Any, ttl: int | None) -> CellVersion:
    """A live cell as a write makes it: its expiry counts from the write's second (the log
    carries the write time, not the instant the source applied it)."""
    if ttl:
        return CellVersion(write_time_us, value, True, ttl, expiry_second(write_time_us, ttl))
    return CellVersion(write_time_us, value)


def tombstone(write_time_us: int) -> CellVersion:
    return CellVersion(write_time_us, None, False)


def compare(
    left: CellVersion, right: CellVersion, column: str, serialized: Serialized, key: Any = None
) -> int:
    """Above 0: ``left`` wins; below 0: ``right`` wins; 0: either (they read alike).
    ``column`` and ``key`` name the cell, for its value's serialization."""
    if left.write_time_us != right.write_time_us:
        return 1 if left.write_time_us > right.write_time_us else -1
    if left.live != right.live:
        return -1 if left.live else 1
    if not left.live:
        return 0
    if (left.ttl is None) != (right.ttl is None):
        return 1 if left.ttl is not None else -1
    if left.ttl is not None and right.ttl is not None:
        assert left.expiry_s is not None and right.expiry_s is not None
        if left.expiry_s != right.expiry_s:
            return 1 if left.expiry_s > right.expiry_s else -1
        if left.ttl != right.ttl:
            return 1 if left.ttl < right.ttl else -1
    return _compare_bytes(serialized(column, key, left.value), serialized(column, key, right.value))


def compare_markers(left: CellVersion, right: CellVersion) -> int:
    """Two row markers' order: a cell's, with no value to break a tie."""
    return compare(left, right, "", _no_value)


def merged(
    held: CellVersion | None,
    new: CellVersion,
    column: str,
    serialized: Serialized,
    key: Any = None,
) -> CellVersion:
    """What a replica holds after ``new`` reaches a cell holding ``held``."""
    if held is None or compare(new, held, column, serialized, key) > 0:
        return new
    return held


def is_live(cell: CellVersion, now_s: int) -> bool:
    """Whether a cell reads as a value at second ``now_s``: live and not expired (a cell
    expires at its expiry second)."""
    return cell.live and (cell.expiry_s is None or cell.expiry_s > now_s)


def shadowed(cell: CellVersion, tombstone_us: int | None) -> bool:
    """Whether a row, range or partition tombstone at ``tombstone_us`` deletes ``cell``:
    it deletes whatever was written at or before it."""
    return tombstone_us is not None and cell.write_time_us <= tombstone_us


def _compare_bytes(left: bytes, right: bytes) -> int:
    return (left > right) - (left < right)  # Python orders bytes unsigned, as memcmp


def _no_value(column: str, key: Any, value: Any) -> bytes:
    return b""
