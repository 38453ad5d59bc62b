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
  collection with ``cdc$deleted_<col> = true`` was overwritten (its value is the new
  content, written as ``col = value``, whose tombstone ScyllaDB also puts at ts - 1),
  without it the value holds added elements (``col = col + value``) and
  ``cdc$deleted_elements_<col>`` the removed ones (``col = col - keys``); row and
  partition deletes are deletes; a range delete is two rows, its start bound
  (operation 5 inclusive, 6 exclusive) and end bound (7, 8), each carrying the bound's
  clustering prefix (null columns past it; no prefix at all is an open bound); pre- and
  post-images are not changes and are skipped. ``cdc$ttl`` is the write's TTL.

Names come from the sink table's definition and are quoted; values are bound, never
pasted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from cdcgen.core.cdc_log import (
    OPERATION,
    TTL,
    Operation,
    deleted_column,
    deleted_elements_column,
)


class ReplayError(ValueError):
    """A change that cannot be replayed as logged; the message names it."""


class ColumnKind(Enum):
    """How a regular column is replayed: a cell, or a non-frozen collection's elements."""

    ATOMIC = "atomic"
    SET = "set"
    MAP = "map"
    LIST = "list"


@dataclass(frozen=True)
class SinkTable:
    """The replicated table on the sink: the same definition as the source's base table."""

    keyspace: str
    table: str
    partition_key: tuple[str, ...]
    clustering_key: tuple[str, ...] = ()
    columns: Mapping[str, ColumnKind] = field(default_factory=dict)

    @property
    def qualified(self) -> str:
        return f"{quote(self.keyspace)}.{quote(self.table)}"


@dataclass(frozen=True)
class Statement:
    """One CQL statement with its bound values."""

    cql: str
    values: tuple[Any, ...]


def quote(name: str) -> str:
    """A CQL identifier, double-quoted (so case and reserved words survive)."""
    return '"' + name.replace('"', '""') + '"'


def batch_statements(
    table: SinkTable, rows: Sequence[Mapping[str, Any]], write_time_us: int
) -> list[Statement]:
    """The statements that replay one CDC batch (its rows in ``cdc$batch_seq_no`` order)."""
    statements: list[Statement] = []
    pending_start: Mapping[str, Any] | None = None
    for row in rows:
        operation = Operation(row[OPERATION])
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
        statements.extend(row_statements(table, operation, row, write_time_us))
    if pending_start is not None:
        raise ReplayError(_unpaired(table, write_time_us))
    return statements


def _unpaired(table: SinkTable, write_time_us: int) -> str:
    return (
        f"{table.keyspace}.{table.table}: a range delete's start bound without its end "
        f"bound in the batch at {write_time_us}"
    )


def row_statements(
    table: SinkTable, operation: Operation, row: Mapping[str, Any], write_time_us: int
) -> list[Statement]:
    """Insert, update, row delete or partition delete of one log row."""
    if operation is Operation.PARTITION_DELETE:
        where, keys = _where(table.partition_key, row, table)
        return [_delete(table, where, keys, write_time_us)]
    where, keys = _where((*table.partition_key, *table.clustering_key), row, table)
    if operation is Operation.ROW_DELETE:
        return [_delete(table, where, keys, write_time_us)]
    using, using_values = _using(write_time_us, row.get(TTL))
    if operation is Operation.INSERT:
        names = [*table.partition_key, *table.clustering_key]
        values = [row[name] for name in names]
        for column in table.columns:
            if row.get(column) is not None or row.get(deleted_column(column)):
                names.append(column)
                values.append(row.get(column))
        columns = ", ".join(quote(n) for n in names)
        marks = ", ".join("?" for _ in names)
        cql = f"INSERT INTO {table.qualified} ({columns}) VALUES ({marks}) {using}"
        return [Statement(cql, (*values, *using_values))]
    if operation is not Operation.UPDATE:
        raise ReplayError(f"{table.keyspace}.{table.table}: operation {operation.label} unexpected")
    statements = []
    for assignments in _update_assignments(table, row):
        sets = ", ".join(a for a, _ in assignments)
        assigned = tuple(v for _, v in assignments)
        cql = f"UPDATE {table.qualified} {using} SET {sets} WHERE {where}"
        statements.append(Statement(cql, (*using_values, *assigned, *keys)))
    return statements


def _update_assignments(table: SinkTable, row: Mapping[str, Any]) -> list[list[tuple[str, Any]]]:
    """The SET clauses of an update: element removals go in a statement of their own
    (CQL refuses two assignments of one column in one statement)."""
    main: list[tuple[str, Any]] = []
    removals: list[tuple[str, Any]] = []
    for column, kind in table.columns.items():
        value = row.get(column)
        name = quote(column)
        if kind is ColumnKind.ATOMIC or row.get(deleted_column(column)):
            if value is not None or row.get(deleted_column(column)):
                main.append((f"{name} = ?", value))
            continue
        if value:
            main.append((f"{name} = {name} + ?", value))
        removed = row.get(deleted_elements_column(column))
        if removed:
            if kind is ColumnKind.LIST:
                raise ReplayError(
                    f"{table.keyspace}.{table.table}.{column}: removed list elements are "
                    "logged by cell key, which CQL cannot address"
                )
            removals.append((f"{name} = {name} - ?", set(removed)))
    return [group for group in (main, removals) if group]


def range_delete(
    table: SinkTable,
    start: Mapping[str, Any] | None,
    end: Mapping[str, Any],
    write_time_us: int,
) -> Statement:
    """``DELETE ... WHERE pk = ? AND (ck..) >= (..) AND (ck..) < (..)`` of a bound pair."""
    if start is None:
        raise ReplayError(
            f"{table.keyspace}.{table.table}: a range delete's end bound without its start "
            f"bound in the batch at {write_time_us}"
        )
    where, keys = _where(table.partition_key, end, table)
    clauses = [where]
    values = list(keys)
    for bound, inclusive, less in (
        (start, Operation(start[OPERATION]) is Operation.RANGE_DELETE_START_INCLUSIVE, False),
        (end, Operation(end[OPERATION]) is Operation.RANGE_DELETE_END_INCLUSIVE, True),
    ):
        prefix = _prefix(table.clustering_key, bound)
        if not prefix:
            continue  # an open bound
        names = ", ".join(quote(n) for n in prefix)
        relation = ("<" if less else ">") + ("=" if inclusive else "")
        marks = ", ".join("?" for _ in prefix)
        clauses.append(f"({names}) {relation} ({marks})")
        values.extend(bound[n] for n in prefix)
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
    missing = [n for n in names if row.get(n) is None]
    if missing:
        raise ReplayError(
            f"{table.keyspace}.{table.table}: key column(s) {', '.join(missing)} missing "
            "from a change that needs them"
        )
    return " AND ".join(f"{quote(n)} = ?" for n in names), tuple(row[n] for n in names)


def _delete(table: SinkTable, where: str, keys: tuple[Any, ...], write_time_us: int) -> Statement:
    return Statement(
        f"DELETE FROM {table.qualified} USING TIMESTAMP ? WHERE {where}", (write_time_us, *keys)
    )


def _using(write_time_us: int, ttl: int | None) -> tuple[str, tuple[Any, ...]]:
    if ttl:
        return "USING TIMESTAMP ? AND TTL ?", (write_time_us, int(ttl))
    return "USING TIMESTAMP ?", (write_time_us,)
