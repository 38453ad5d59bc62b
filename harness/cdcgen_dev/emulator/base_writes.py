"""One base-table write as the workload makes it, and the CQL that applies it (pure).

Kept apart from :mod:`cdcgen_dev.emulator.log_rows` (what ScyllaDB logs for the write):
this side is only the base table's, and both sides check a write by the same rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from cdcgen.core.cdc_log import Operation
from cdcgen_dev.emulator.log_schema import BaseTableSpec

RANGE_DELETE: Final = Operation.RANGE_DELETE_START_INCLUSIVE
"""A range delete, as a workload mix key and as :attr:`BaseWrite.operation`.

ScyllaDB has no single code for it (it logs a start-bound row, 5 or 6, and an end-bound
row, 7 or 8), so the write is spelled by the code of its first possible row; the log rows
take their real codes from the range's bounds. Reported as ``range_delete``.
"""

WRITE_OPERATIONS: Final = (
    Operation.INSERT,
    Operation.UPDATE,
    Operation.ROW_DELETE,
    Operation.PARTITION_DELETE,
    RANGE_DELETE,
)


def operation_label(operation: Operation) -> str:
    """How a write's kind is counted in reports (``range_delete``, not its first code)."""
    return "range_delete" if operation is RANGE_DELETE else operation.label


@dataclass(frozen=True)
class RangeBound:
    """One side of a range delete, on the clustering column right after the prefix."""

    value: Any
    inclusive: bool = True


@dataclass(frozen=True)
class ClusteringRange:
    """The rows a range delete removes: the first ``len(prefix)`` clustering columns equal
    ``prefix``, the next one lies between ``start`` and ``end`` (``None``: open side)."""

    prefix: tuple[Any, ...] = ()
    start: RangeBound | None = None
    end: RangeBound | None = None


@dataclass(frozen=True)
class BaseRowChange:
    """One clustering row touched by a write (no clustering key for a partition delete).

    ``values``: column -> new value, ``None`` for null (a tombstone). A non-frozen
    collection's value is added (``c = c + ?``) unless the column is in ``overwritten``
    (``c = ?``, UPDATE only; an INSERT always overwrites). ``removed``: non-frozen set ->
    the elements an UPDATE removes (``c = c - ?``). CQL cannot add to and remove from one
    set in one assignment, so a column is in ``values`` or ``removed``, never both.
    """

    clustering: tuple[Any, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)
    removed: Mapping[str, Any] = field(default_factory=dict)
    overwritten: frozenset[str] = frozenset()


@dataclass(frozen=True)
class BaseWrite:
    """One base-table mutation: a partition, an operation, its rows, timestamp and TTL;
    a range delete (:data:`RANGE_DELETE`) has its ``clustering_range`` and no rows."""

    operation: Operation
    partition: tuple[Any, ...]
    rows: tuple[BaseRowChange, ...]
    timestamp_us: int
    ttl: int | None = None
    clustering_range: ClusteringRange | None = None


def check_write(spec: BaseTableSpec, write: BaseWrite) -> None:
    """Refuse (``ValueError``) a write the base table or CQL cannot express as one change."""
    if write.operation not in WRITE_OPERATIONS:
        raise ValueError(f"operation {write.operation.name} is not a base write")
    if (write.clustering_range is not None) != (write.operation is RANGE_DELETE):
        raise ValueError("a range delete, and only a range delete, has a clustering range")
    if write.clustering_range is not None:
        if write.rows:
            raise ValueError("a range delete has no rows")
        _check_range(spec, write.clustering_range)
    columns = {c.name: c.type for c in spec.columns}
    for change in write.rows:
        unknown = (set(change.values) | set(change.removed)) - set(columns)
        if unknown:
            raise ValueError(f"{spec.qualified_table} has no data columns {sorted(unknown)}")
        if (change.removed or change.overwritten) and write.operation is not Operation.UPDATE:
            raise ValueError("only an UPDATE removes set elements or overwrites a collection")
        for name, elements in change.removed.items():
            kind = columns[name]
            if kind.kind != "set" or not kind.is_multi_cell or name in change.values:
                raise ValueError(f"{name}: only a non-frozen set not otherwise set loses elements")
            if not elements:
                raise ValueError(f"{name}: removing no elements is no change")
        for name in change.overwritten:
            if name not in change.values or not columns[name].is_multi_cell:
                raise ValueError(f"{name}: only a non-frozen collection given a value overwrites")
        if write.operation is Operation.UPDATE and not (change.values or change.removed):
            raise ValueError("an UPDATE must change a column")


def _check_range(spec: BaseTableSpec, clustering_range: ClusteringRange) -> None:
    """A range delete names fewer clustering columns than the key (else it deletes one
    row) and at least one (else it deletes the partition); its range is not empty."""
    depth = len(clustering_range.prefix)
    start, end = clustering_range.start, clustering_range.end
    bounded = start is not None or end is not None
    if depth >= len(spec.clustering_key):
        raise ValueError(f"{spec.qualified_table}: a range must leave a clustering column open")
    if not depth and not bounded:
        raise ValueError("a range with neither prefix nor bound is a partition delete")
    if start is not None and end is not None and not start.value < end.value:
        raise ValueError("a range delete's start must be below its end (CQL: empty range)")


def base_statements(spec: BaseTableSpec, write: BaseWrite) -> list[tuple[str, list[Any]]]:
    """The CQL (names allow-listed, values bound) that applies ``write`` to the base table."""
    check_write(spec, write)
    table = spec.qualified_table
    pk_where = " AND ".join(f"{c.name} = ?" for c in spec.partition_key)
    ck_where = " AND ".join(f"{c.name} = ?" for c in spec.clustering_key)
    using = "USING TIMESTAMP ?" + (" AND TTL ?" if write.ttl is not None else "")
    using_params: list[Any] = [write.timestamp_us] + ([write.ttl] if write.ttl is not None else [])
    delete = f"DELETE FROM {table} USING TIMESTAMP ? WHERE"
    if write.operation is Operation.PARTITION_DELETE:
        return [(f"{delete} {pk_where}", [write.timestamp_us, *write.partition])]
    if write.clustering_range is not None:
        where, params = _range_where(spec, write.clustering_range)
        return [
            (f"{delete} {pk_where} AND {where}", [write.timestamp_us, *write.partition, *params])
        ]
    multi = {c.name for c in spec.columns if c.type.is_multi_cell}
    statements: list[tuple[str, list[Any]]] = []
    for change in write.rows:
        key_params = [*write.partition, *change.clustering]
        where = " AND ".join(filter(None, [pk_where, ck_where]))
        if write.operation is Operation.ROW_DELETE:
            statements.append((f"{delete} {where}", [write.timestamp_us, *key_params]))
        elif write.operation is Operation.INSERT:
            names = [c.name for c in spec.key_columns] + list(change.values)
            marks = ", ".join("?" for _ in names)
            statements.append(
                (
                    f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks}) {using}",
                    [*key_params, *change.values.values(), *using_params],
                )
            )
        else:
            sets, params = _assignments(change, multi)
            statements.append(
                (
                    f"UPDATE {table} {using} SET {', '.join(sets)} WHERE {where}",
                    [*using_params, *params, *key_params],
                )
            )
    return statements


def _assignments(change: BaseRowChange, multi: set[str]) -> tuple[list[str], list[Any]]:
    """An UPDATE's ``SET`` clauses and their bound values, in column order."""
    sets: list[str] = []
    params: list[Any] = []
    for name, value in change.values.items():
        if value is None:
            sets.append(f"{name} = null")
            continue
        appended = name in multi and name not in change.overwritten
        sets.append(f"{name} = {name} + ?" if appended else f"{name} = ?")
        params.append(value)
    for name, elements in change.removed.items():
        sets.append(f"{name} = {name} - ?")
        params.append(elements)
    return sets, params


def _range_where(spec: BaseTableSpec, clustering_range: ClusteringRange) -> tuple[str, list[Any]]:
    """``ck1 = ? AND ck2 > ? AND ck2 <= ?``: the prefix, then the bounds on the next column."""
    depth = len(clustering_range.prefix)
    clauses = [f"{c.name} = ?" for c in spec.clustering_key[:depth]]
    params = list(clustering_range.prefix)
    if depth < len(spec.clustering_key):
        column = spec.clustering_key[depth].name
        start, end = clustering_range.start, clustering_range.end
        if start is not None:
            clauses.append(f"{column} {'>=' if start.inclusive else '>'} ?")
            params.append(start.value)
        if end is not None:
            clauses.append(f"{column} {'<=' if end.inclusive else '<'} ?")
            params.append(end.value)
    return " AND ".join(clauses), params
