"""A partition's state as a replica holds it, folded from the mutations its log rows make,
and the rows a read at an instant returns from it (pure).

The sink's replay hands each mutation to a CQL database, which resolves it
(:mod:`cdcgen.core.sink_statements`); a mirror has no database, so it keeps what one keeps
and resolves each change itself, by the same rules:

* every cell keeps its version (write time, TTL, expiry, or a tombstone) and a new
  version replaces it only when it wins (:mod:`cdcgen.core.operations.reconcile`), so
  changes fold in any order and a change folded twice changes nothing;
* a non-frozen collection or user type is one cell per element, map key or field, and
  an overwrite is the column's tombstone at the write time - 1 (ScyllaDB's), then the
  new elements;
* an insert writes the row marker (the row exists while it lives, whatever its cells);
* a row, range or partition tombstone deletes the cells, elements and markers written
  at or before it, and stays, so that an older write folded later is deleted too;
* a static row's cells belong to the partition.

A read at second ``now_s`` drops what is shadowed or expired: a clustering row is
returned while its marker or one of its cells lives; the static row while one of its
cells does. What is shadowed is purged when a tombstone is folded (it can never read
again); expired cells stay until read, since the state is kept without a clock.

Where the log does not say enough to be exact:

* ``cdc$deleted_<col>`` with no value is both ``SET col = null`` (ScyllaDB's tombstone
  at the write time - 1) and ``DELETE col`` (at the write time); the fold takes the
  first, as the sink's replay does, so elements written at exactly the delete's time
  survive it here and not there;
* a TTL counts from the write time (the log does not carry the second the coordinator
  applied the write), so a write with an older client timestamp expires earlier here;
* an expired cell that compaction turned into a tombstone wins a tie its live form
  would lose (a later expiry at the same write time); the fold keeps the live form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdcgen.core.frozen import frozen_value
from cdcgen.core.operations.mutations import (
    AddElements,
    Bound,
    Mutation,
    NullFields,
    Overwrite,
    PartitionDelete,
    RangeDelete,
    RemoveElements,
    RowDelete,
    RowWrite,
    SetFields,
    SetValue,
)
from cdcgen.core.operations.reconcile import (
    CellVersion,
    Serialized,
    compare_markers,
    is_live,
    merged,
    shadowed,
    tombstone,
    written,
)
from cdcgen.core.operations.table import ColumnKind, TableShape

#: A sort key of one clustering column's (or collection element's) values in the CQL
#: type's order, given the column.
SortKey = Callable[[str, Any], Any]


@dataclass
class CollectionCells:
    """A non-frozen column's cells: its tombstone (an overwrite's, or a delete's) and one
    version per element (a set's), key (a map's, a list's time UUID) or field name (a
    user type's)."""

    tombstone_us: int | None = None
    elements: dict[Any, CellVersion] = field(default_factory=dict)
    #: Each element's key as written, by its identity (:meth:`Fold.element_identity`).
    keys: dict[Any, Any] = field(default_factory=dict)


@dataclass
class RowCells:
    """One row's state: its clustering key's values, tombstone, row marker, atomic cells
    and collections."""

    clustering: tuple[Any, ...] = ()
    tombstone_us: int | None = None
    marker: CellVersion | None = None
    cells: dict[str, CellVersion] = field(default_factory=dict)
    collections: dict[str, CollectionCells] = field(default_factory=dict)


@frozen_value
class RangeTombstone:
    start: Bound
    end: Bound
    write_time_us: int


@dataclass
class PartitionCells:
    """One partition's state: its tombstone, range tombstones, static row and rows by
    their clustering key's identity (:meth:`Fold.identity`)."""

    tombstone_us: int | None = None
    ranges: list[RangeTombstone] = field(default_factory=list)
    static: RowCells = field(default_factory=RowCells)
    rows: dict[tuple[Any, ...], RowCells] = field(default_factory=dict)


@frozen_value
class MirrorRow:
    """A row as a read returns it: its key (the partition key's values alone for the
    static row), each column's value (None: null) and the write time of each atomic
    cell that has one (``WRITETIME``: what a check compares cell for cell)."""

    key: tuple[Any, ...]
    static: bool
    values: dict[str, Any]
    write_times: dict[str, int]


class Fold:
    """Folds one table's mutations into partition states; ``serialized`` breaks ties
    between equal write times (a value's CQL bytes), ``sort_key`` orders clustering
    values and collection elements as the CQL type does, and tells them apart: two
    keys are one when their sort keys are equal (a float's -0 and 0 are two, every NaN
    one), as the database's comparator decides."""

    def __init__(self, table: TableShape, serialized: Serialized, sort_key: SortKey) -> None:
        self.table = table
        self.serialized = serialized
        self.sort_key = sort_key

    # -- folding --------------------------------------------------------------------

    def apply(self, partition: PartitionCells, mutation: Mutation) -> None:
        """``mutation`` (of this partition) folded into ``partition``."""
        if isinstance(mutation, RowWrite):
            self._write(partition, mutation)
        elif isinstance(mutation, PartitionDelete):
            self._delete_partition(partition, mutation.write_time_us)
        elif isinstance(mutation, RangeDelete):
            self._delete_range(partition, mutation.start, mutation.end, mutation.write_time_us)
        else:
            self._delete_row(partition, mutation)

    def _write(self, partition: PartitionCells, write: RowWrite) -> None:
        if write.static:
            row = partition.static
        else:
            row = self._row(partition, write.key[len(self.table.partition_key) :])
        covering = self._covering(partition, write.static, write.key)
        at, ttl = write.write_time_us, write.ttl
        if write.marker:
            marker = written(at, None, ttl)
            if not shadowed(marker, covering) and (
                row.marker is None or compare_markers(marker, row.marker) > 0
            ):
                row.marker = marker
        for cell in write.cells:
            column = cell.column
            if isinstance(cell, SetValue):
                version = tombstone(at) if cell.value is None else written(at, cell.value, ttl)
                if not shadowed(version, covering):
                    row.cells[column] = merged(
                        row.cells.get(column), version, column, self.serialized
                    )
                continue
            cells = row.collections.setdefault(column, CollectionCells())
            if isinstance(cell, Overwrite):
                self._tombstone_collection(cells, at - 1)
                self._add(cells, column, self._elements(column, cell.value), at, ttl, covering)
            elif isinstance(cell, AddElements):
                self._add(cells, column, self._elements(column, cell.elements), at, ttl, covering)
            elif isinstance(cell, SetFields):
                self._add(cells, column, cell.fields, at, ttl, covering)
            elif isinstance(cell, RemoveElements):
                self._remove(cells, column, cell.keys, at, covering)
            elif isinstance(cell, NullFields):
                self._remove(cells, column, cell.fields, at, covering)

    def _elements(self, column: str, value: Any) -> list[tuple[Any, Any]]:
        """A collection value's cells: ``(element, None)`` of a set, ``(key, value)`` of
        a map, ``(field, value)`` of a user type's non-null fields."""
        if value is None:
            return []
        kind = self.table.columns[column]
        if kind is ColumnKind.SET:
            return [(element, None) for element in value]
        if kind in (ColumnKind.MAP, ColumnKind.LIST):  # a list's cells: keys to values
            return list(value.items() if isinstance(value, Mapping) else value)
        names = self.table.fields[column]
        return [(n, v) for n, v in zip(names, value, strict=True) if v is not None]

    def _add(
        self,
        cells: CollectionCells,
        column: str,
        elements: Any,
        at: int,
        ttl: int | None,
        covering: int | None,
    ) -> None:
        for key, value in elements:
            version = written(at, value, ttl)
            if shadowed(version, covering) or shadowed(version, cells.tombstone_us):
                continue
            self._merge_element(cells, column, key, version)

    def _remove(
        self, cells: CollectionCells, column: str, keys: Any, at: int, covering: int | None
    ) -> None:
        for key in keys:
            version = tombstone(at)
            if shadowed(version, covering) or shadowed(version, cells.tombstone_us):
                continue
            self._merge_element(cells, column, key, version)

    def _merge_element(
        self, cells: CollectionCells, column: str, key: Any, version: CellVersion
    ) -> None:
        identity = self.element_identity(column, key)
        cells.keys.setdefault(identity, key)
        held = cells.elements.get(identity)
        cells.elements[identity] = merged(held, version, column, self.serialized, key)

    def _row(self, partition: PartitionCells, ck: tuple[Any, ...]) -> RowCells:
        identity = self.identity(ck)
        row = partition.rows.get(identity)
        if row is None:
            row = partition.rows[identity] = RowCells(ck)
        return row

    def identity(self, ck: tuple[Any, ...]) -> tuple[Any, ...]:
        """A clustering key as the database tells keys apart: by its columns' sort keys."""
        return tuple(
            self.sort_key(n, v) for n, v in zip(self.table.clustering_key, ck, strict=True)
        )

    def element_identity(self, column: str, key: Any) -> Any:
        """A collection element (or map or list key) by its sort key; a user type's field
        by its name."""
        if self.table.columns[column] is ColumnKind.UDT:
            return key
        return self.sort_key(column, key)

    @staticmethod
    def _tombstone_collection(cells: CollectionCells, at: int) -> None:
        if cells.tombstone_us is None or at > cells.tombstone_us:
            cells.tombstone_us = at
            cells.elements = {
                k: v for k, v in cells.elements.items() if not shadowed(v, cells.tombstone_us)
            }

    def _delete_partition(self, partition: PartitionCells, at: int) -> None:
        if partition.tombstone_us is not None and at <= partition.tombstone_us:
            return
        partition.tombstone_us = at
        _purge(partition.static, at)
        for row in partition.rows.values():
            _purge(row, at)

    def _delete_row(self, partition: PartitionCells, delete: RowDelete) -> None:
        """A row's tombstone; a key of the partition key alone deletes the partition (as
        ``DELETE ... WHERE`` the partition key does)."""
        size = len(self.table.partition_key)
        if len(delete.key) <= size:
            self._delete_partition(partition, delete.write_time_us)
            return
        ck = delete.key[size:]
        if len(ck) < len(self.table.clustering_key):  # a prefix: every row under it
            bound = Bound(ck, True)
            self._delete_range(partition, bound, bound, delete.write_time_us)
            return
        row = self._row(partition, ck)
        if row.tombstone_us is None or delete.write_time_us > row.tombstone_us:
            row.tombstone_us = delete.write_time_us
            _purge(row, delete.write_time_us)

    def _delete_range(self, partition: PartitionCells, start: Bound, end: Bound, at: int) -> None:
        partition.ranges.append(RangeTombstone(start, end, at))
        for row in partition.rows.values():
            if self._in_range(row.clustering, start, end):
                _purge(row, at)

    def _covering(
        self, partition: PartitionCells, static: bool, key: tuple[Any, ...]
    ) -> int | None:
        """The newest tombstone over a row (the row's own is applied by its cells)."""
        newest = partition.tombstone_us
        if static:
            return newest
        ck = key[len(self.table.partition_key) :]
        row = partition.rows.get(self.identity(ck))
        for at in [r.write_time_us for r in partition.ranges if self._in_range(ck, r.start, r.end)]:
            newest = at if newest is None else max(newest, at)
        if row is not None and row.tombstone_us is not None:
            newest = row.tombstone_us if newest is None else max(newest, row.tombstone_us)
        return newest

    # -- clustering order -----------------------------------------------------------

    def _in_range(self, ck: tuple[Any, ...], start: Bound, end: Bound) -> bool:
        """Whether clustering key ``ck`` lies between two bounds given in clustering
        order (an open bound: no prefix)."""
        low = self._prefix_order(ck, start.prefix)
        if low < 0 or (low == 0 and not start.inclusive and start.prefix):
            return False
        high = self._prefix_order(ck, end.prefix)
        return not (high > 0 or (high == 0 and not end.inclusive and end.prefix))

    def _prefix_order(self, ck: tuple[Any, ...], prefix: tuple[Any, ...]) -> int:
        """``ck`` against a bound's prefix, in clustering order: 0 when ``ck`` starts with
        it."""
        for name, mine, theirs in zip(self.table.clustering_key, ck, prefix, strict=False):
            a, b = self.sort_key(name, mine), self.sort_key(name, theirs)
            if a != b:
                order = 1 if a > b else -1
                return -order if name in self.table.descending else order
        return 0

    # -- reading --------------------------------------------------------------------

    def rows(self, key: tuple[Any, ...], partition: PartitionCells, now_s: int
             ) -> Iterator[MirrorRow]:  # fmt: skip
        """What a read of the partition at second ``now_s`` returns: its static row (when
        one of its cells lives) then its live rows in clustering order."""
        static = self._read(partition.static, self.table.static_columns, now_s)
        if static is not None:
            yield MirrorRow(key, True, *static)
        order = sorted(partition.rows.items(), key=lambda item: self._clustering_sort_key(item[0]))
        for _, row in order:
            read = self._read(row, self.table.row_columns, now_s)
            if read is None and row.marker is not None and is_live(row.marker, now_s):
                read = dict.fromkeys(self.table.row_columns), {}  # the marker alone
            if read is not None:
                yield MirrorRow((*key, *row.clustering), False, *read)

    def _read(
        self, row: RowCells, columns: dict[str, ColumnKind], now_s: int
    ) -> tuple[dict[str, Any], dict[str, int]] | None:
        """A row's live values and their write times; None when no cell lives."""
        values: dict[str, Any] = {}
        times: dict[str, int] = {}
        for column, kind in columns.items():
            if kind is ColumnKind.ATOMIC:
                cell = row.cells.get(column)
                if cell is not None and is_live(cell, now_s):
                    values[column] = cell.value
                    times[column] = cell.write_time_us
                continue
            cells = row.collections.get(column)
            if cells is None:
                continue
            live = {k: v for k, v in cells.elements.items() if is_live(v, now_s)}
            if live:
                values[column] = self._collection_value(column, kind, live, cells.keys)
        if not values:
            return None
        return {c: values.get(c) for c in columns}, times

    def _collection_value(
        self, column: str, kind: ColumnKind, live: dict[Any, CellVersion], keys: dict[Any, Any]
    ) -> Any:
        """The live cells of a collection (by identity) as its value, in its order."""
        if kind is ColumnKind.UDT:
            return tuple(live[n].value if n in live else None for n in self.table.fields[column])
        order = sorted(live)  # identities are sort keys
        if kind is ColumnKind.SET:
            return [keys[i] for i in order]
        if kind is ColumnKind.LIST:
            return [live[i].value for i in order]
        return [(keys[i], live[i].value) for i in order]

    def _clustering_sort_key(self, identity: tuple[Any, ...]) -> tuple[Any, ...]:
        """A row's place in clustering order, from its identity (its sort keys)."""
        return tuple(
            _Descending(key) if name in self.table.descending else key
            for name, key in zip(self.table.clustering_key, identity, strict=True)
        )


def _purge(row: RowCells, at: int) -> None:
    """Whatever of ``row`` a tombstone at ``at`` deletes, gone."""
    if row.marker is not None and shadowed(row.marker, at):
        row.marker = None
    row.cells = {c: v for c, v in row.cells.items() if not shadowed(v, at)}
    for cells in row.collections.values():
        cells.elements = {k: v for k, v in cells.elements.items() if not shadowed(v, at)}


class _Descending:
    """A sort key turned around (a clustering column sorted ``DESC``)."""

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key

    def __lt__(self, other: _Descending) -> bool:
        return bool(other.key < self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and bool(self.key == other.key)

    def __hash__(self) -> int:
        return hash(self.key)
