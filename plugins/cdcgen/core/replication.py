"""How one CDC batch of the log becomes the statements that replay it on a sink (pure).

The rules of the YugabyteDB xCluster design, on ScyllaDB's log rows:

* **Last writer wins by the original timestamp.** Every statement carries ``USING
  TIMESTAMP`` of the change's write time, so replaying a change twice, or late, can
  never overwrite a newer one: the sink resolves it as the source did.
* **A CDC batch is one unit.** ScyllaDB gives every log row of one base mutation the
  same ``cdc$time`` and numbers them ``cdc$batch_seq_no`` 0 .. ``cdc$end_of_batch``; a
  base mutation touches one partition, so its statements go in one single-partition
  batch, which Cassandra and ScyllaDB apply atomically and in isolation.
* **Each operation as ScyllaDB logs it** (``cdc/log.cc``, docs "CDC log table"):
  an insert writes the row marker and its cells; an update only its cells; a column
  with ``cdc$deleted_<col> = true`` and no value was set to null; a non-frozen
  collection or UDT with ``cdc$deleted_<col> = true`` was overwritten (its value is the
  new content, written as ``col = value``, whose tombstone ScyllaDB also puts at
  ts - 1), without it the value holds added elements (``col = col + value``) or the
  UDT's fields set (``col.field = value``), and ``cdc$deleted_elements_<col>`` the
  removed keys (``col = col - keys``) or the indices of the fields set to null; a
  static row's change is a row of its own with no clustering key (written by partition
  key); row and partition deletes are deletes; a range delete is two rows, its start
  bound (operation 5 inclusive, 6 exclusive) and end bound (7, 8) in clustering order,
  each carrying the bound's clustering prefix (null columns past it; no prefix at all is
  an open bound);
  pre- and post-images are not changes and are skipped.
* **A TTL counts from the original write.** ``cdc$ttl`` is the write's TTL; replayed
  later, the cells get what is left of it (write time + TTL - now, in whole seconds as
  the database counts them), so they expire on the sink when they expire on the source.
  A cell that has already expired is written as what it is on the source by now, a
  tombstone at its write time (elements and fields removed, values set to null); an
  expired insert's row marker is not written at all (CQL cannot write a dead one), so
  the row exists on the sink only through its other cells, as on the source.

Non-frozen lists are not replayed (:mod:`cdcgen.replication.sink_schema` refuses them
up front): the log keys their cells by time UUIDs that CQL can neither choose on an
append nor read back after a copy. Names come from the sink table's definition and are
quoted; values are bound, never pasted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property, lru_cache
from typing import Any

from cdcgen.core.cdc_log import (
    OPERATION,
    TTL,
    Operation,
    deleted_column,
    deleted_elements_column,
)
from cdcgen.core.errors import TerminalError

MICROS = 1_000_000
#: Each operation by its logged code (``Operation(code)`` costs an enum lookup a row).
_OPERATIONS = {int(operation): operation for operation in Operation}


class ReplayError(TerminalError, ValueError):
    """A change that cannot be replayed as logged; the message names it."""


class ColumnKind(Enum):
    """How a data column is replayed: one cell, or a non-frozen type's elements."""

    ATOMIC = "atomic"
    SET = "set"
    MAP = "map"
    UDT = "udt"


@dataclass(frozen=True)
class SinkTable:
    """The replicated table on the sink: the same definition as the source's base table.

    ``static``: its static columns (changed by rows of their own, by partition key);
    ``fields``: each non-frozen UDT column's field names, in order (the log names a
    field set to null by its index); ``descending``: its clustering columns sorted
    ``DESC`` (a range delete's bounds are logged in clustering order).
    """

    keyspace: str
    table: str
    partition_key: tuple[str, ...]
    clustering_key: tuple[str, ...] = ()
    columns: Mapping[str, ColumnKind] = field(default_factory=dict)
    static: frozenset[str] = frozenset()
    fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    descending: frozenset[str] = frozenset()

    @cached_property
    def qualified(self) -> str:
        return f"{quote(self.keyspace)}.{quote(self.table)}"

    @cached_property
    def row_columns(self) -> dict[str, ColumnKind]:
        """The columns a clustering row's change may set (every column of a table
        without clustering key)."""
        return {c: k for c, k in self.columns.items() if c not in self.static}

    @cached_property
    def static_columns(self) -> dict[str, ColumnKind]:
        """The columns a static row's change may set."""
        return {c: k for c, k in self.columns.items() if c in self.static}

    @property
    def name(self) -> str:
        """``keyspace.table`` as errors name it."""
        return f"{self.keyspace}.{self.table}"


@dataclass(frozen=True)
class Statement:
    """One CQL statement with its bound values."""

    cql: str
    values: tuple[Any, ...]


@lru_cache(maxsize=4096)
def quote(name: str) -> str:
    """A CQL identifier, double-quoted (so case and reserved words survive)."""
    return '"' + name.replace('"', '""') + '"'


@lru_cache(maxsize=1024)
def _equalities(names: tuple[str, ...]) -> str:
    """``"a" = ? AND "b" = ?``: a WHERE clause or its key part."""
    return " AND ".join(f"{quote(n)} = ?" for n in names)


@lru_cache(maxsize=4096)
def _insert_cql(table: str, names: tuple[str, ...], using: str) -> str:
    columns = ", ".join(quote(n) for n in names)
    marks = ", ".join("?" for _ in names)
    return f"INSERT INTO {table} ({columns}) VALUES ({marks}) {using}"


@lru_cache(maxsize=4096)
def _update_cql(table: str, using: str, sets: tuple[str, ...], where: str) -> str:
    return f"UPDATE {table} {using} SET {', '.join(sets)} WHERE {where}"


def remaining_ttl(write_time_us: int, ttl: int, now_us: int) -> int:
    """Seconds a cell written at ``write_time_us`` with ``ttl`` has left at ``now_us``;
    0 or less: expired. Whole seconds, as Cassandra and ScyllaDB count expiry (the write
    second plus the TTL)."""
    return write_time_us // MICROS + ttl - now_us // MICROS


def batch_statements(
    table: SinkTable, rows: Sequence[Mapping[str, Any]], write_time_us: int, *, now_us: int
) -> list[Statement]:
    """The statements that replay one CDC batch (its rows in ``cdc$batch_seq_no`` order),
    with TTLs counted down to ``now_us`` (the sink's clock)."""
    statements: list[Statement] = []
    pending_start: Mapping[str, Any] | None = None
    for row in rows:
        code = row[OPERATION]
        operation = _OPERATIONS[code] if code in _OPERATIONS else Operation(code)
        if operation in (Operation.PRE_IMAGE, Operation.POST_IMAGE):
            continue
        if operation in (
            Operation.RANGE_DELETE_START_INCLUSIVE,
            Operation.RANGE_DELETE_START_EXCLUSIVE,
        ):
            pending_start = row
            continue
        if operation in (
            Operation.RANGE_DELETE_END_INCLUSIVE,
            Operation.RANGE_DELETE_END_EXCLUSIVE,
        ):
            statements.append(range_delete(table, pending_start, row, write_time_us))
            pending_start = None
            continue
        if pending_start is not None:
            raise ReplayError(_unpaired(table, write_time_us))
        statements.extend(row_statements(table, operation, row, write_time_us, now_us=now_us))
    if pending_start is not None:
        raise ReplayError(_unpaired(table, write_time_us))
    return statements


def _unpaired(table: SinkTable, write_time_us: int) -> str:
    return (
        f"{table.name}: a range delete's start bound without its end bound in the batch "
        f"at {write_time_us}"
    )


def row_statements(
    table: SinkTable,
    operation: Operation,
    row: Mapping[str, Any],
    write_time_us: int,
    *,
    now_us: int,
) -> list[Statement]:
    """Insert, update, row delete or partition delete of one log row."""
    if operation is Operation.PARTITION_DELETE:
        where, keys = _where(table.partition_key, row, table)
        return [_delete(table, where, keys, write_time_us)]
    if operation not in (Operation.INSERT, Operation.UPDATE, Operation.ROW_DELETE):
        raise ReplayError(f"{table.name}: operation {operation.label} unexpected")
    static = is_static_row(table, row)
    key_names = table.partition_key if static else (*table.partition_key, *table.clustering_key)
    where, keys = _where(key_names, row, table)
    if operation is Operation.ROW_DELETE:
        return [_delete(table, where, keys, write_time_us)]
    ttl = row.get(TTL)
    if ttl:
        ttl = remaining_ttl(write_time_us, int(ttl), now_us)
        if ttl <= 0:
            row, operation, ttl = expired(table, row), Operation.UPDATE, None
    columns = _columns_of(table, row, static)
    using, using_values = _using(write_time_us, ttl)
    if operation is Operation.INSERT and not static:
        names = list(key_names)
        values = [row[name] for name in names]
        for column in columns:
            if row.get(column) is not None or row.get(deleted_column(column)):
                names.append(column)
                values.append(row.get(column))
        cql = _insert_cql(table.qualified, tuple(names), using)
        return [Statement(cql, (*values, *using_values))]
    statements = []
    for assignments in _update_assignments(table, row, columns):
        sets = tuple(a for a, _ in assignments)
        assigned = tuple(v for _, v in assignments)
        cql = _update_cql(table.qualified, using, sets, where)
        statements.append(Statement(cql, (*using_values, *assigned, *keys)))
    return statements


def is_static_row(table: SinkTable, row: Mapping[str, Any]) -> bool:
    """A log row of a static row's change: the table has a clustering key, the row none."""
    keys = table.clustering_key
    return bool(keys) and list(map(row.get, keys)).count(None) == len(keys)


def _columns_of(table: SinkTable, row: Mapping[str, Any], static: bool) -> dict[str, ColumnKind]:
    """The columns a row may change: the static ones of a static row, the others else;
    a value for the other kind is refused by name."""
    mine, others = table.static_columns, table.row_columns
    if not static:
        mine, others = others, mine
    stray = [
        c
        for c in others
        if (
            row.get(c) is not None
            or row.get(deleted_column(c))
            or row.get(deleted_elements_column(c))
        )
    ]
    if stray:
        what = "a static row" if static else "a clustering row"
        raise ReplayError(f"{table.name}: {what}'s change sets column(s) {', '.join(stray)}")
    return mine


def expired(table: SinkTable, row: Mapping[str, Any]) -> dict[str, Any]:
    """An expired log row as the tombstones its cells have become: values set to null,
    collection elements and UDT fields removed; no TTL, no row marker (an update)."""
    dead = {k: v for k, v in row.items() if k != TTL}
    dead[OPERATION] = int(Operation.UPDATE)
    for column, kind in table.columns.items():
        value = row.get(column)
        if value is None:
            continue
        dead[column] = None
        removed = deleted_elements_column(column)
        if kind is ColumnKind.ATOMIC:
            dead[deleted_column(column)] = True
        elif kind is ColumnKind.SET:
            dead[removed] = set(row.get(removed) or ()) | set(value)
        elif kind is ColumnKind.MAP:
            keys = value.keys() if isinstance(value, Mapping) else (k for k, _ in value)
            dead[removed] = set(row.get(removed) or ()) | set(keys)
        else:
            fields = {i for i, v in enumerate(value) if v is not None}
            dead[removed] = set(row.get(removed) or ()) | fields
    return dead


def _update_assignments(
    table: SinkTable, row: Mapping[str, Any], columns: Mapping[str, ColumnKind]
) -> list[list[tuple[str, Any]]]:
    """The SET clauses of an update: element removals go in a statement of their own
    (CQL refuses two assignments of one column in one statement)."""
    main: list[tuple[str, Any]] = []
    removals: list[tuple[str, Any]] = []
    for column, kind in columns.items():
        value = row.get(column)
        name = quote(column)
        overwritten = row.get(deleted_column(column))
        removed = row.get(deleted_elements_column(column))
        if kind is ColumnKind.ATOMIC or overwritten:
            if value is not None or overwritten:
                main.append((f"{name} = ?", value))
            if kind is ColumnKind.ATOMIC or not removed:
                continue
        elif kind is ColumnKind.UDT:
            names = _fields(table, column)
            if value is not None:
                main.extend(
                    (f"{name}.{quote(f)} = ?", v)
                    for f, v in zip(names, value, strict=True)
                    if v is not None
                )
        elif value:
            main.append((f"{name} = {name} + ?", value))
        if not removed:
            continue
        if kind is ColumnKind.UDT:
            names = _fields(table, column)
            removals.extend((f"{name}.{quote(_field(table, column, names, i))} = ?", None)
                            for i in sorted(removed))  # fmt: skip
        else:
            removals.append((f"{name} = {name} - ?", set(removed)))
    return [group for group in (main, removals) if group]


def _fields(table: SinkTable, column: str) -> tuple[str, ...]:
    names = table.fields.get(column)
    if names is None:
        raise ReplayError(f"{table.name}.{column}: the UDT's fields are unknown")
    return names


def _field(table: SinkTable, column: str, names: tuple[str, ...], index: int) -> str:
    if not 0 <= index < len(names):
        raise ReplayError(
            f"{table.name}.{column}: field index {index} logged as deleted, but the UDT has "
            f"{len(names)} field(s)"
        )
    return names[index]


def range_delete(
    table: SinkTable,
    start: Mapping[str, Any] | None,
    end: Mapping[str, Any],
    write_time_us: int,
) -> Statement:
    """The ``DELETE`` of a range delete's bound pair.

    ScyllaDB logs the bounds in clustering order (``cdc/log.cc`` sets each row's
    clustering prefix from the range tombstone's start and end): on a column sorted
    descending, the start bound holds the larger value. CQL compares relations by value.
    So the bounds' common prefix becomes equalities, and each bound's rest one relation
    on the columns after it, turned around where they sort descending. A rest over
    columns of both orders has no value-order form in CQL and is refused by name (a
    ``DELETE`` a user writes never makes one: its range is a prefix and one column).
    """
    if start is None:
        raise ReplayError(
            f"{table.name}: a range delete's end bound without its start bound in the batch "
            f"at {write_time_us}"
        )
    where, keys = _where(table.partition_key, end, table)
    bounds = (
        (start, _prefix(table.clustering_key, start), True),
        (end, _prefix(table.clustering_key, end), False),
    )
    common = 0
    (_, lower, _), (_, upper, _) = bounds
    while common < min(len(lower), len(upper)) and start[lower[common]] == end[upper[common]]:
        common += 1
    # A user's DELETE bounds one column past a shared prefix: equalities, then one plain
    # relation per bound. A bound over several more columns needs tuple relations, which
    # CQL refuses to mix with plain ones on clustering columns: then every bound is a
    # tuple over its whole prefix.
    single = all(len(prefix) - common <= 1 for _, prefix, _ in bounds)
    clauses = [where]
    values = list(keys)
    if single:
        clauses += [f"{quote(name)} = ?" for name in lower[:common]]
        values += [start[name] for name in lower[:common]]
    for bound, prefix, is_start in bounds:
        names = prefix[common:] if single else prefix
        if not names:
            continue  # open past the shared prefix
        orders = {name in table.descending for name in names}
        if len(orders) > 1:
            raise ReplayError(
                f"{table.name}: a range delete bounded on clustering columns of both orders "
                f"({', '.join(names)}) at {write_time_us} has no CQL form"
            )
        inclusive = Operation(bound[OPERATION]) in (
            Operation.RANGE_DELETE_START_INCLUSIVE,
            Operation.RANGE_DELETE_END_INCLUSIVE,
        )
        from_below = is_start != orders.pop()  # a start bound is a lower one on ASC
        relation = (">" if from_below else "<") + ("=" if inclusive else "")
        quoted = ", ".join(quote(n) for n in names)
        marks = ", ".join("?" for _ in names)
        clauses.append(f"{quoted} {relation} ?" if single else f"({quoted}) {relation} ({marks})")
        values.extend(bound[n] for n in names)
    cql = f"DELETE FROM {table.qualified} USING TIMESTAMP ? WHERE {' AND '.join(clauses)}"
    return Statement(cql, (write_time_us, *values))


def _prefix(clustering: Sequence[str], bound: Mapping[str, Any]) -> list[str]:
    """The clustering columns a bound row fixes: its leading non-null ones."""
    prefix = []
    for name in clustering:
        if bound.get(name) is None:
            break
        prefix.append(name)
    return prefix


def _where(
    names: Sequence[str], row: Mapping[str, Any], table: SinkTable
) -> tuple[str, tuple[Any, ...]]:
    keys = tuple(row.get(n) for n in names)
    if None in keys:
        missing = [n for n, v in zip(names, keys, strict=True) if v is None]
        raise ReplayError(
            f"{table.name}: key column(s) {', '.join(missing)} missing from a change that "
            "needs them"
        )
    return _equalities(tuple(names)), keys


def _delete(table: SinkTable, where: str, keys: tuple[Any, ...], write_time_us: int) -> Statement:
    return Statement(
        f"DELETE FROM {table.qualified} USING TIMESTAMP ? WHERE {where}", (write_time_us, *keys)
    )


def _using(write_time_us: int, ttl: int | None) -> tuple[str, tuple[Any, ...]]:
    if ttl:
        return "USING TIMESTAMP ? AND TTL ?", (write_time_us, int(ttl))
    return "USING TIMESTAMP ?", (write_time_us,)
