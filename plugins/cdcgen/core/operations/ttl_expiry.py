"""Time to live: when a cell written with a TTL expires, and what it is after that.

A TTL counts from the write: ``cdc$ttl`` is the write's TTL, and the cell expires at the
write's second plus the TTL (Cassandra and ScyllaDB count expiry in whole seconds). An
expired cell is not gone: it is a tombstone at its write time, which still shadows older
cells, so an expired write is its cells' tombstones (values set to null, a collection's
elements and a user type's fields removed) with no row marker (an expired insert's row
exists only through other, living cells).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdcgen.core.operations.mutations import (
    AddElements,
    CellChange,
    NullFields,
    Overwrite,
    RemoveElements,
    RowWrite,
    SetFields,
    SetValue,
)
from cdcgen.core.operations.table import ColumnKind, TableShape

MICROS = 1_000_000


def expiry_second(write_time_us: int, ttl: int) -> int:
    """The second a cell written at ``write_time_us`` with ``ttl`` stops being live: the
    write second plus the TTL (Cassandra and ScyllaDB count expiry in whole seconds)."""
    return write_time_us // MICROS + ttl


def remaining_ttl(write_time_us: int, ttl: int, now_us: int) -> int:
    """Seconds a cell written at ``write_time_us`` with ``ttl`` has left at ``now_us``;
    0 or less: expired."""
    return expiry_second(write_time_us, ttl) - now_us // MICROS


def expired(table: TableShape, write: RowWrite) -> RowWrite:
    """``write`` once its TTL ran out: the tombstones its cells have become, at its write
    time, without TTL or row marker."""
    kept: dict[str, list[CellChange]] = {}
    removed: dict[str, set[Any]] = {}
    for cell in write.cells:
        column = cell.column
        if isinstance(cell, SetValue):
            kept.setdefault(column, []).append(SetValue(column, None))
        elif isinstance(cell, Overwrite):
            kept.setdefault(column, []).append(Overwrite(column, None))
            removed.setdefault(column, set()).update(_cells_of(table, column, cell.value))
        elif isinstance(cell, AddElements):
            removed.setdefault(column, set()).update(_cells_of(table, column, cell.elements))
        elif isinstance(cell, SetFields):
            names = table.fields[column]
            removed.setdefault(column, set()).update(names.index(f) for f, _ in cell.fields)
        elif isinstance(cell, RemoveElements):
            removed.setdefault(column, set()).update(cell.keys)
        else:
            names = table.fields[column]
            removed.setdefault(column, set()).update(names.index(f) for f in cell.fields)
    cells: list[CellChange] = []
    for column in dict.fromkeys(cell.column for cell in write.cells):
        cells.extend(kept.get(column, ()))
        gone = removed.get(column)
        if not gone:
            continue
        if table.columns[column] is ColumnKind.UDT:
            names = table.fields[column]
            cells.append(NullFields(column, tuple(names[i] for i in sorted(gone))))
        else:
            cells.append(RemoveElements(column, gone))
    return RowWrite(write.key, write.static, False, write.write_time_us, None, tuple(cells))


def _cells_of(table: TableShape, column: str, value: Any) -> set[Any]:
    """What of a non-frozen value are cells of their own: a set's elements, a map's (or
    a list's) keys, the indices of a user type's non-null fields."""
    if value is None:
        return set()
    kind = table.columns[column]
    if kind is ColumnKind.SET:
        return set(value)
    if kind in (ColumnKind.MAP, ColumnKind.LIST):  # a list's cells: a map's, by key
        return set(value.keys() if isinstance(value, Mapping) else (k for k, _ in value))
    return {i for i, v in enumerate(value) if v is not None}
