"""One base-table write as the workload makes it, and the CQL that applies it (pure).

Kept apart from :mod:`cdcgen_dev.emulator.log_rows` (what ScyllaDB logs for the write):
this side is only the base table's, and both sides check a write by the same rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from cdcgen.core.cdc_log import Operation
from cdcgen_dev.emulator.log_schema import BaseTableSpec, Column, TypeKind

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


#: ScyllaDB numbers the cells a statement or batch appends to lists with sub-microsecond
#: steps of its timestamp, at most ten (``cql3/lists.cc``: "Too many list values per
#: single CQL statement or batch").
LIST_APPEND_LIMIT = 10


@dataclass(frozen=True)
class BaseRowChange:
    """One clustering row touched by a write (no clustering key for a partition delete,
    nor for a partition's static row).

    ``values``: column -> new value, ``None`` for null (a tombstone). A non-frozen
    collection's value is added (``c = c + ?``: set elements, map entries, list elements
    appended) unless the column is in ``overwritten`` (``c = ?``, UPDATE only; an INSERT
    always overwrites). A non-frozen user type's value always overwrites it (``u = ?``;
    a tuple of its fields, in order). ``removed``: non-frozen set or map -> the elements
    or keys an UPDATE removes (``c = c - ?``). ``fields``: non-frozen user type -> field
    -> value or ``None``, what an UPDATE sets field by field (``u.f = ?``, ``u.f =
    null``). CQL cannot change one column two ways in one statement, so a column is in
    one of ``values``, ``removed`` and ``fields``.
    """

    clustering: tuple[Any, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)
    removed: Mapping[str, Any] = field(default_factory=dict)
    overwritten: frozenset[str] = frozenset()
    fields: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def columns(self) -> set[str]:
        return {*self.values, *self.removed, *self.fields}


@dataclass(frozen=True)
class BaseWrite:
    """One base-table mutation: a partition, an operation, its rows, timestamp and TTL;
    a range delete (:data:`RANGE_DELETE`) has its ``clustering_range`` and no rows. An
    INSERT or UPDATE may also change the partition's static row (``static``, whose
    clustering is empty), or only it."""

    operation: Operation
    partition: tuple[Any, ...]
    rows: tuple[BaseRowChange, ...]
    timestamp_us: int
    ttl: int | None = None
    clustering_range: ClusteringRange | None = None
    static: BaseRowChange | None = None

    @property
    def changes(self) -> tuple[BaseRowChange, ...]:
        """The static row's change first (if any), then the rows': ScyllaDB's order."""
        return ((self.static,) if self.static is not None else ()) + self.rows


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
    upsert = write.operation in (Operation.INSERT, Operation.UPDATE)
    if write.static is not None:
        if not upsert:
            raise ValueError("only an INSERT or an UPDATE changes static columns")
        if write.static.clustering:
            raise ValueError("the static row has no clustering key")
        if write.operation is Operation.INSERT and not write.static.values:
            raise ValueError("an INSERT of static columns gives them values")
        _check_change(spec, write, write.static, spec.static_columns)
    elif upsert and not write.rows:
        raise ValueError(f"an {write.operation.label} changes a row or the static row")
    for change in write.rows:
        _check_change(spec, write, change, spec.regular_columns)
    appended = sum(len(v) for v in list_additions(spec, write))
    if appended > LIST_APPEND_LIMIT:
        raise ValueError(
            f"{appended} list elements in one write: ScyllaDB takes at most {LIST_APPEND_LIMIT}"
        )


def _check_change(
    spec: BaseTableSpec, write: BaseWrite, change: BaseRowChange, allowed: Sequence[Column]
) -> None:
    """One row's (or the static row's) change against the columns it may touch."""
    columns = {c.name: c.type for c in allowed}
    unknown = change.columns - set(columns)
    if unknown:
        where = "static" if change is write.static else "regular"
        raise ValueError(
            f"{spec.qualified_table} has no data columns {sorted(unknown)} among its {where} ones"
        )
    if (change.removed or change.overwritten or change.fields) and (
        write.operation is not Operation.UPDATE
    ):
        raise ValueError("only an UPDATE removes elements, overwrites or sets fields")
    if len(change.columns) < len(change.values) + len(change.removed) + len(change.fields):
        raise ValueError("a column is changed one way per statement (value, removal or fields)")
    for name, elements in change.removed.items():
        kind = columns[name]
        if kind.kind is TypeKind.LIST and kind.is_multi_cell:
            raise ValueError(
                f"{name}: removing list elements needs the base table's cell keys (not emulated)"
            )
        if kind.kind not in (TypeKind.SET, TypeKind.MAP) or not kind.is_multi_cell:
            raise ValueError(f"{name}: only a non-frozen set or map loses elements")
        if not elements:
            raise ValueError(f"{name}: removing no elements is no change")
    for name in change.overwritten:
        kind = columns[name]
        if name not in change.values or not (kind.is_multi_cell and kind.is_collection):
            raise ValueError(f"{name}: only a non-frozen collection given a value overwrites")
    for name, assigned in change.fields.items():
        kind = columns[name]
        if kind.kind is not TypeKind.UDT or not kind.is_multi_cell:
            raise ValueError(f"{name}: only a non-frozen user type is set field by field")
        if not assigned:
            raise ValueError(f"{name}: setting no field is no change")
        user_type = spec.user_type(kind.name)
        for field_name in assigned:
            user_type.index(field_name)
    for name, value in change.values.items():
        kind = columns[name]
        if kind.kind is TypeKind.UDT and value is not None:
            size = len(spec.user_type(kind.name).fields)
            if len(value) != size:
                raise ValueError(f"{name}: a value of {kind.name} has {size} fields")
    if write.operation is Operation.UPDATE and not change.columns:
        raise ValueError("an UPDATE must change a column")


def list_additions(spec: BaseTableSpec, write: BaseWrite) -> list[Sequence[Any]]:
    """The elements each non-frozen list of the write gets, in ScyllaDB's order (static
    row, then rows; columns in the order the change names them): the order the list
    cells' time UUIDs number them."""
    lists = {c.name for c in spec.columns if c.type.kind is TypeKind.LIST and c.type.is_multi_cell}
    return [
        value
        for change in write.changes
        for name, value in change.values.items()
        if name in lists and value is not None
    ]


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
    pk_where = " AND ".join(f"{c.name} = ?" for c in spec.partition_key)
    ck_where = " AND ".join(f"{c.name} = ?" for c in spec.clustering_key)
    delete = f"DELETE FROM {spec.qualified_table} USING TIMESTAMP ? WHERE"
    if write.operation is Operation.PARTITION_DELETE:
        return [(f"{delete} {pk_where}", [write.timestamp_us, *write.partition])]
    if write.clustering_range is not None:
        where, params = _range_where(spec, write.clustering_range)
        return [
            (f"{delete} {pk_where} AND {where}", [write.timestamp_us, *write.partition, *params])
        ]
    statements: list[tuple[str, list[Any]]] = []
    if write.operation is Operation.ROW_DELETE:
        where = " AND ".join(filter(None, [pk_where, ck_where]))
        for change in write.rows:
            key_params = [*write.partition, *change.clustering]
            statements.append((f"{delete} {where}", [write.timestamp_us, *key_params]))
        return statements
    appended = {c.name for c in spec.columns if c.type.is_multi_cell and c.type.is_collection}
    if write.static is not None:  # the partition's static row: its key is the partition's
        statements.append(
            _upsert(spec, write, write.static, spec.partition_key, pk_where, appended)
        )
    where = " AND ".join(filter(None, [pk_where, ck_where]))
    for change in write.rows:
        statements.append(_upsert(spec, write, change, spec.key_columns, where, appended))
    return statements


def _upsert(
    spec: BaseTableSpec,
    write: BaseWrite,
    change: BaseRowChange,
    keys: Sequence[Column],
    where: str,
    appended: set[str],
) -> tuple[str, list[Any]]:
    """The INSERT or UPDATE of one row (or of the static row, keyed by the partition)."""
    table = spec.qualified_table
    using = "USING TIMESTAMP ?" + (" AND TTL ?" if write.ttl is not None else "")
    using_params: list[Any] = [write.timestamp_us] + ([write.ttl] if write.ttl is not None else [])
    key_params = [*write.partition, *change.clustering]
    if write.operation is Operation.INSERT:
        names = [c.name for c in keys] + list(change.values)
        marks = ", ".join("?" for _ in names)
        return (
            f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks}) {using}",
            [*key_params, *change.values.values(), *using_params],
        )
    sets, params = _assignments(change, appended)
    return (
        f"UPDATE {table} {using} SET {', '.join(sets)} WHERE {where}",
        [*using_params, *params, *key_params],
    )


def _assignments(change: BaseRowChange, appended: set[str]) -> tuple[list[str], list[Any]]:
    """An UPDATE's ``SET`` clauses and their bound values, in column order: ``appended``
    are the non-frozen collections, added to unless overwritten."""
    sets: list[str] = []
    params: list[Any] = []
    for name, value in change.values.items():
        if value is None:
            sets.append(f"{name} = null")
            continue
        added = name in appended and name not in change.overwritten
        sets.append(f"{name} = {name} + ?" if added else f"{name} = ?")
        params.append(value)
    for name, elements in change.removed.items():
        sets.append(f"{name} = {name} - ?")
        params.append(elements)
    for name, assigned in change.fields.items():
        for field_name, value in assigned.items():
            if value is None:
                sets.append(f"{name}.{field_name} = null")
            else:
                sets.append(f"{name}.{field_name} = ?")
                params.append(value)
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
