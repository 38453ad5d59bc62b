"""What one base-table write looks like in the base table and in its CDC log (pure).

A write is one mutation of one partition at one timestamp: ScyllaDB gives all its log
rows the same ``cdc$time`` (a time UUID of the write timestamp) and numbers them with
``cdc$batch_seq_no`` from 0; the last carries ``cdc$end_of_batch = true``. What each
change logs (``cdc/log.cc``, ``process_row_visitor`` and ``range_delete``):

* a value: the column; a null (a dead cell): ``cdc$deleted_<col> = true``, no value;
  frozen collections, frozen user types and tuples are values like any other;
* a non-frozen set or map: ``c = c + ...`` logs the added elements; an INSERT or
  ``c = ...`` also writes a collection tombstone, so ``cdc$deleted_<col> = true`` comes
  with them; ``c = c - ...`` logs the removed elements (keys) in
  ``cdc$deleted_elements_<col>``;
* a non-frozen list: the same, its cells keyed by time UUIDs (the log's column is a
  ``map<timeuuid, T>``). ScyllaDB keys appended cells by the write's timestamp and a
  per-write sequence (:func:`list_cell_key`); Cassandra, which holds the sandbox's base
  tables, keys them by its own clock and CQL cannot read those keys back, so the log's
  keys are the emulator's own. Removing list elements (by index or value) deletes the
  base table's cells by their keys, which the emulator does not know: not emulated;
* a non-frozen user type: ``u = ...`` is a tombstone plus its non-null fields,
  ``u.f = v`` a field, ``u.f = null`` the field's index in
  ``cdc$deleted_elements_<col>``; the value is always logged, fields not set null;
* the static row: a log row of its own, ``cdc$operation`` UPDATE even for an INSERT (it
  has no row marker), no clustering values, before the clustering rows of the write;
* a range delete: two rows, its start bound (5 inclusive, 6 exclusive) and its end bound
  (7, 8), each with the bound's clustering prefix; an open side is the empty prefix,
  inclusive (``bound_view::bottom()``/``top()``), so its row has no clustering values.

``cdc$ttl`` is the TTL of the live cells only (``cdc/split.cc``): with ``USING TTL`` a
row's dead cells, tombstones and removals are split into their own log row without TTL
(before the live one), and an INSERT's non-atomic columns into an UPDATE row of their
own. The log cells themselves live for the table's CDC TTL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from cdcgen.core.cdc_log import GREGORIAN_OFFSET_100NS, Operation
from cdcgen_dev.emulator.base_writes import (
    LIST_APPEND_LIMIT,
    RANGE_DELETE,
    WRITE_OPERATIONS,
    BaseRowChange,
    BaseWrite,
    ClusteringRange,
    RangeBound,
    base_statements,
    check_write,
    operation_label,
)
from cdcgen_dev.emulator.log_schema import (
    BATCH_SEQ_NO,
    END_OF_BATCH,
    OPERATION,
    STREAM_ID,
    TIME,
    TTL,
    BaseTableSpec,
    TypeKind,
    deleted_column,
    deleted_elements_column,
    log_columns,
)

__all__ = [
    "RANGE_DELETE",
    "WRITE_OPERATIONS",
    "BaseRowChange",
    "BaseWrite",
    "ClusteringRange",
    "Operation",
    "RangeBound",
    "base_statements",
    "list_cell_key",
    "log_insert_cql",
    "log_insert_params",
    "log_row_values",
    "operation_label",
]


@dataclass(frozen=True)
class _LogRow:
    """One log row before numbering: its operation, clustering prefix, cells and TTL."""

    operation: Operation
    clustering: tuple[Any, ...] = ()
    cells: Mapping[str, Any] = field(default_factory=dict)
    ttl: int | None = None


def log_row_values(spec: BaseTableSpec, write: BaseWrite) -> list[dict[str, Any]]:
    """The log rows of ``write`` as ``{log column: value}``, without stream and time.

    Columns a row does not set are absent (they are written as unset, leaving no cell, as
    ScyllaDB leaves none): a null column, the clustering columns past a range bound's
    prefix, every data column of a delete.
    """
    check_write(spec, write)
    result = []
    rows = _log_rows(spec, write)
    for seq, log_row in enumerate(rows):
        row: dict[str, Any] = {BATCH_SEQ_NO: seq, OPERATION: int(log_row.operation)}
        if log_row.ttl is not None:
            row[TTL] = log_row.ttl
        for column, value in zip(spec.partition_key, write.partition, strict=True):
            row[column.name] = value
        # A bound's prefix may be shorter than the key: the rest stays unset.
        for column, value in zip(spec.clustering_key, log_row.clustering, strict=False):
            row[column.name] = value
        row.update(log_row.cells)
        if seq == len(rows) - 1:
            row[END_OF_BATCH] = True
        result.append(row)
    return result


def _log_rows(spec: BaseTableSpec, write: BaseWrite) -> list[_LogRow]:
    """The rows in ScyllaDB's order, one per change (``cdc/split.cc`` for TTLs)."""
    if write.operation is Operation.PARTITION_DELETE:
        return [_LogRow(Operation.PARTITION_DELETE)]
    if write.operation is RANGE_DELETE:
        assert write.clustering_range is not None  # check_write
        return [_LogRow(op, prefix) for op, prefix in range_bounds(write.clustering_range)]
    if write.operation is Operation.ROW_DELETE:
        return [_LogRow(Operation.ROW_DELETE, change.clustering) for change in write.rows]
    cells = _Cells(spec, write)
    insert = write.operation is Operation.INSERT
    # The static row is a change of its own, logged first, always as an UPDATE (it has no
    # row marker: ``static_row_cells`` in cdc/log.cc); with a TTL its dead part (no TTL)
    # comes before its live part, like any other change with both.
    static: list[_LogRow] = []
    if write.static is not None:
        dead, live = cells.split(write.static, insert)
        if write.ttl is None:
            static.append(_LogRow(Operation.UPDATE, (), {**dead, **live}))
        else:
            if dead:
                static.append(_LogRow(Operation.UPDATE, (), dead))
            if live:
                static.append(_LogRow(Operation.UPDATE, (), live, write.ttl))
    if write.ttl is None:  # one (timestamp, no TTL) group: one row per clustering row
        return static + [
            _LogRow(write.operation, change.clustering, {**dead, **live})
            for change in write.rows
            for dead, live in [cells.split(change, insert)]
        ]
    # Cells with a TTL and cells without (dead cells, tombstones) are separate changes:
    # each clustering row logs its dead part, then its live part. An INSERT's row marker
    # and atomic cells come first, all rows, then the non-atomic columns' parts as UPDATEs.
    heads: list[_LogRow] = []
    parts: list[_LogRow] = []
    for change in write.rows:
        dead, live = cells.split(change, insert)
        if insert:
            atomic = {k: v for k, v in live.items() if k not in cells.multi}
            heads.append(_LogRow(Operation.INSERT, change.clustering, atomic, write.ttl))
            live = {k: v for k, v in live.items() if k in cells.multi}
        if dead:
            parts.append(_LogRow(Operation.UPDATE, change.clustering, dead))
        if live:
            parts.append(_LogRow(Operation.UPDATE, change.clustering, live, write.ttl))
    return static + heads + parts


class _Cells:
    """How one write's changes become log cells, split into a dead part (never a TTL)
    and a live part (the write's TTL), per ``process_row_visitor`` in cdc/log.cc:

    * an atomic column (native, frozen, tuple): its value, or ``cdc$deleted_<col>`` for a
      null (a dead cell);
    * a non-frozen collection: the added cells as the value (a list's keyed by its cells'
      time UUIDs, :func:`list_cell_key`), the removed keys in
      ``cdc$deleted_elements_<col>``, and ``cdc$deleted_<col>`` for a tombstone (an
      INSERT, an overwrite, a null); an empty one adds no cell;
    * a non-frozen user type: the same, its fields as cells (removed: the indices of the
      fields set to null), except that the value is always there, with the fields the
      part does not set null: ``udt_visitor`` sizes its cells to every field, so the log
      holds a value even for ``u = null`` or ``u.f = null`` (test_udt_logging in
      test/boost/cdc_test.cc expects it).
    """

    def __init__(self, spec: BaseTableSpec, write: BaseWrite) -> None:
        kinds = {c.name: c.type for c in spec.columns}
        self.multi = {name for name, kind in kinds.items() if kind.is_multi_cell}
        self.lists = {n for n in self.multi if kinds[n].kind is TypeKind.LIST}
        self.sizes = {
            name: len(spec.user_type(kind.name).fields)
            for name, kind in kinds.items()
            if kind.kind is TypeKind.UDT and kind.is_multi_cell
        }
        self.indices = {name: spec.user_type(kinds[name].name).field_names for name in self.sizes}
        self.timestamp_us = write.timestamp_us
        self.list_cells = 0  # list elements numbered so far in this write

    def split(self, change: BaseRowChange, insert: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        """A row change's log cells as (dead: never a TTL, live: the write's TTL)."""
        dead: dict[str, Any] = {}
        live: dict[str, Any] = {}
        for name, value in change.values.items():
            if name in self.sizes:
                self._user_type(name, dead, live, tombstone=True, value=value)
                continue
            tombstone = name in self.multi and (insert or name in change.overwritten)
            if value is None or tombstone:
                dead[deleted_column(name)] = True
            if value is None:
                continue
            if name in self.lists:
                value = self._list_cells(value)
            # A collection's elements are its cells: an empty one writes none.
            if name not in self.multi or len(value) > 0:
                live[name] = value
        for name, elements in change.removed.items():
            dead[deleted_elements_column(name)] = elements
        for name, assigned in change.fields.items():
            names = self.indices[name]
            value = tuple(assigned.get(field_name) for field_name in names)
            nulled = {names.index(f) for f, v in assigned.items() if v is None}
            self._user_type(name, dead, live, tombstone=False, value=value, nulled=nulled)
        return dead, live

    def _user_type(
        self,
        name: str,
        dead: dict[str, Any],
        live: dict[str, Any],
        *,
        tombstone: bool,
        value: tuple[Any, ...] | None,
        nulled: set[int] | None = None,
    ) -> None:
        """A non-frozen user type's cells: a part it appears in holds a value."""
        empty = (None,) * self.sizes[name]
        if tombstone:
            dead[deleted_column(name)] = True
        if nulled:
            dead[deleted_elements_column(name)] = nulled
        if tombstone or nulled:
            dead[name] = empty
        if value is not None and any(v is not None for v in value):
            live[name] = tuple(value)

    def _list_cells(self, elements: Sequence[Any]) -> dict[UUID, Any]:
        """A non-frozen list's new cells, keyed as ScyllaDB keys them."""
        cells = {}
        for element in elements:
            cells[list_cell_key(self.timestamp_us, self.list_cells)] = element
            self.list_cells += 1
        return cells


#: The clock sequence and node of the list cells' time UUIDs: a coordinator's own, fixed
#: (ScyllaDB's ``UUID_gen`` uses the node's); any fixed value keys cells apart by time.
LIST_CELL_CLOCK_SEQ_AND_NODE = 0x8000_C0DE_CAFE_F00D


def list_cell_key(timestamp_us: int, seq: int) -> UUID:
    """The time UUID ScyllaDB keys the ``seq``-th list cell a write appends with:
    ``get_time_UUID_bytes_from_micros_and_submicros(timestamp, seq)``, the write time in
    100 ns units plus ``seq`` (below :data:`LIST_APPEND_LIMIT`), so a write's elements
    sort in the order it appends them.

    Cassandra, which stores the sandbox's base tables, keys the cells it appends by its
    own clock, which CQL cannot read back: the log's keys are the emulator's, not the
    base table's, which is why removals by index or value are not emulated.
    """
    if not 0 <= seq < LIST_APPEND_LIMIT:
        raise ValueError(f"list cell {seq}: at most {LIST_APPEND_LIMIT} per write")
    ticks = timestamp_us * 10 + seq + GREGORIAN_OFFSET_100NS
    time_low, time_mid, time_hi = ticks & 0xFFFFFFFF, (ticks >> 32) & 0xFFFF, ticks >> 48
    node = LIST_CELL_CLOCK_SEQ_AND_NODE
    return UUID(
        fields=(
            time_low,
            time_mid,
            (time_hi & 0x0FFF) | 0x1000,
            (node >> 56) & 0xFF,
            (node >> 48) & 0xFF,
            node & 0xFFFF_FFFF_FFFF,
        )
    )


def range_bounds(
    clustering_range: ClusteringRange,
) -> tuple[tuple[Operation, tuple[Any, ...]], tuple[Operation, tuple[Any, ...]]]:
    """The two bound rows ScyllaDB logs for a range delete: ``(operation, prefix)`` each.

    CQL makes ``prefix = p AND c > a`` the range from ``p + (a,)`` exclusive to ``p``
    inclusive (``cql3/restrictions/statement_restrictions.cc``); an open side with no
    prefix is ``bottom()``/``top()``, the empty prefix, inclusive. ``range_delete`` in
    ``cdc/log.cc`` writes both bounds, whatever they are.
    """
    prefix = clustering_range.prefix
    start, end = clustering_range.start, clustering_range.end
    if start is None:
        first = (Operation.RANGE_DELETE_START_INCLUSIVE, prefix)
    elif start.inclusive:
        first = (Operation.RANGE_DELETE_START_INCLUSIVE, (*prefix, start.value))
    else:
        first = (Operation.RANGE_DELETE_START_EXCLUSIVE, (*prefix, start.value))
    if end is None:
        last = (Operation.RANGE_DELETE_END_INCLUSIVE, prefix)
    elif end.inclusive:
        last = (Operation.RANGE_DELETE_END_INCLUSIVE, (*prefix, end.value))
    else:
        last = (Operation.RANGE_DELETE_END_EXCLUSIVE, (*prefix, end.value))
    return first, last


def log_insert_cql(spec: BaseTableSpec) -> tuple[str, list[str]]:
    """The log table's INSERT (every column bound) and its column order."""
    names = [name for name, _ in log_columns(spec)]
    marks = ", ".join("?" for _ in names)
    cql = (
        f"INSERT INTO {spec.qualified_log_table} ({', '.join(names)}) VALUES ({marks}) "
        "USING TIMESTAMP ? AND TTL ?"
    )
    return cql, names


def log_insert_params(
    names: list[str],
    row: Mapping[str, Any],
    stream: bytes,
    time_uuid: Any,
    timestamp_us: int,
    cdc_ttl: int,
    unset: Any,
) -> list[Any]:
    """Bind values for :func:`log_insert_cql`; ``unset`` is the driver's UNSET_VALUE."""
    values = {STREAM_ID: stream, TIME: time_uuid, **row}
    return [values.get(name, unset) for name in names] + [timestamp_us, cdc_ttl]
