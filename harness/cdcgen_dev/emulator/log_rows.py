"""What one base-table write looks like in the base table and in its CDC log (pure).

A write is one mutation of one partition at one timestamp: ScyllaDB gives all its log
rows the same ``cdc$time`` (a time UUID of the write timestamp) and numbers them with
``cdc$batch_seq_no`` from 0; the last carries ``cdc$end_of_batch = true``. What each
change logs (``cdc/log.cc``, ``process_row_visitor`` and ``range_delete``):

* a value: the column; a null (a dead cell): ``cdc$deleted_<col> = true``, no value;
* a non-frozen set: ``c = c + {...}`` logs the added elements; an INSERT or ``c = {...}``
  also writes a collection tombstone, so ``cdc$deleted_<col> = true`` comes with them;
  ``c = c - {...}`` logs the removed elements in ``cdc$deleted_elements_<col>``;
* a range delete: two rows, its start bound (5 inclusive, 6 exclusive) and its end bound
  (7, 8), each with the bound's clustering prefix; an open side is the empty prefix,
  inclusive (``bound_view::bottom()``/``top()``), so its row has no clustering values.

``cdc$ttl`` is the TTL of the live cells only (``cdc/split.cc``): with ``USING TTL`` a
row's dead cells, tombstones and removals are split into their own log row without TTL
(before the live one), and an INSERT's collection elements into an UPDATE row of their
own. The log cells themselves live for the table's CDC TTL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdcgen.core.cdc_log import Operation
from cdcgen_dev.emulator.base_writes import (
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
    multi = {c.name for c in spec.columns if c.type.is_multi_cell}
    insert = write.operation is Operation.INSERT
    if write.ttl is None:  # one (timestamp, no TTL) group: one row per clustering row
        return [
            _LogRow(write.operation, change.clustering, {**dead, **live})
            for change in write.rows
            for dead, live in [_split_cells(change, multi, insert)]
        ]
    # Cells with a TTL and cells without (dead cells, tombstones) are separate changes:
    # each clustering row logs its dead part, then its live part. An INSERT's row marker
    # and atomic cells come first, all rows, then the collections' parts as UPDATEs.
    heads: list[_LogRow] = []
    parts: list[_LogRow] = []
    for change in write.rows:
        dead, live = _split_cells(change, multi, insert)
        if insert:
            atomic = {k: v for k, v in live.items() if k not in multi}
            heads.append(_LogRow(Operation.INSERT, change.clustering, atomic, write.ttl))
            live = {k: v for k, v in live.items() if k in multi}
        if dead:
            parts.append(_LogRow(Operation.UPDATE, change.clustering, dead))
        if live:
            parts.append(_LogRow(Operation.UPDATE, change.clustering, live, write.ttl))
    return heads + parts


def _split_cells(
    change: BaseRowChange, multi: set[str], insert: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A row change's log cells as (dead: never a TTL, live: the write's TTL)."""
    dead: dict[str, Any] = {}
    live: dict[str, Any] = {}
    for name, value in change.values.items():
        tombstone = name in multi and (insert or name in change.overwritten)
        if value is None or tombstone:
            dead[deleted_column(name)] = True
        # A collection's elements are its cells: an empty one writes none.
        if value is not None and (name not in multi or len(value) > 0):
            live[name] = value
    for name, elements in change.removed.items():
        dead[deleted_elements_column(name)] = elements
    return dead, live


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
