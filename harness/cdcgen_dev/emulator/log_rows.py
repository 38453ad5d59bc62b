"""What one base-table write looks like in the base table and in its CDC log (pure).

A write is one mutation of one partition at one timestamp: ScyllaDB gives all its log
rows the same ``cdc$time`` (a time UUID of the write timestamp) and numbers them with
``cdc$batch_seq_no`` from 0; the last carries ``cdc$end_of_batch = true``. Operations
(``cdc::operation``): 1 update, 2 insert, 3 row delete, 4 partition delete. An insert of
a non-frozen collection overwrites it (a collection tombstone), so its log row says
``cdc$deleted_<col> = true``; ``SET tags = tags + {...}`` logs only the added elements.
``cdc$ttl`` is the base write's TTL (null without one); the log cells themselves live for
the table's CDC TTL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdcgen.core.cdc_log import Operation
from cdcgen_dev.emulator.log_schema import (
    BATCH_SEQ_NO,
    END_OF_BATCH,
    OPERATION,
    STREAM_ID,
    TIME,
    TTL,
    BaseTableSpec,
    deleted_column,
    log_columns,
)

WRITE_OPERATIONS = (
    Operation.INSERT,
    Operation.UPDATE,
    Operation.ROW_DELETE,
    Operation.PARTITION_DELETE,
)


@dataclass(frozen=True)
class BaseRowChange:
    """One clustering row touched by a write (no clustering key for a partition delete)."""

    clustering: tuple[Any, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BaseWrite:
    """One base-table mutation: a partition, an operation, its rows, timestamp and TTL."""

    operation: Operation
    partition: tuple[Any, ...]
    rows: tuple[BaseRowChange, ...]
    timestamp_us: int
    ttl: int | None = None


def log_row_values(spec: BaseTableSpec, write: BaseWrite) -> list[dict[str, Any]]:
    """The log rows of ``write`` as ``{log column: value}``, without stream and time.

    Columns a row does not set are absent (they are written as unset, leaving no cell).
    """
    collections = {c.name for c in spec.columns if c.type.is_multi_cell}
    rows = write.rows or (BaseRowChange(),)
    result = []
    for seq, change in enumerate(rows):
        row: dict[str, Any] = {BATCH_SEQ_NO: seq, OPERATION: int(write.operation)}
        if write.ttl is not None and write.operation in (Operation.INSERT, Operation.UPDATE):
            row[TTL] = write.ttl
        for column, value in zip(spec.partition_key, write.partition, strict=True):
            row[column.name] = value
        if write.operation is not Operation.PARTITION_DELETE:
            for column, value in zip(spec.clustering_key, change.clustering, strict=True):
                row[column.name] = value
        for name, value in change.values.items():
            row[name] = value
            if name in collections and write.operation is Operation.INSERT:
                row[deleted_column(name)] = True
        if seq == len(rows) - 1:
            row[END_OF_BATCH] = True
        result.append(row)
    return result


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


def base_statements(spec: BaseTableSpec, write: BaseWrite) -> list[tuple[str, list[Any]]]:
    """The CQL (names allow-listed, values bound) that applies ``write`` to the base table."""
    table = spec.qualified_table
    pk_where = " AND ".join(f"{c.name} = ?" for c in spec.partition_key)
    ck_where = " AND ".join(f"{c.name} = ?" for c in spec.clustering_key)
    using = "USING TIMESTAMP ?" + (" AND TTL ?" if write.ttl is not None else "")
    using_params: list[Any] = [write.timestamp_us] + ([write.ttl] if write.ttl is not None else [])
    collections = {c.name for c in spec.columns if c.type.is_multi_cell}
    statements: list[tuple[str, list[Any]]] = []
    if write.operation is Operation.PARTITION_DELETE:
        statements.append(
            (
                f"DELETE FROM {table} USING TIMESTAMP ? WHERE {pk_where}",
                [write.timestamp_us, *write.partition],
            )
        )
        return statements
    known = {c.name for c in spec.columns}
    for change in write.rows:
        unknown = set(change.values) - known
        if unknown:
            raise ValueError(f"{spec.qualified_table} has no data columns {sorted(unknown)}")
        key_params = [*write.partition, *change.clustering]
        where = " AND ".join(filter(None, [pk_where, ck_where]))
        if write.operation is Operation.ROW_DELETE:
            statements.append(
                (
                    f"DELETE FROM {table} USING TIMESTAMP ? WHERE {where}",
                    [write.timestamp_us, *key_params],
                )
            )
        elif write.operation is Operation.INSERT:
            names = [c.name for c in spec.key_columns] + list(change.values)
            marks = ", ".join("?" for _ in names)
            statements.append(
                (
                    f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks}) {using}",
                    [*key_params, *change.values.values(), *using_params],
                )
            )
        elif write.operation is Operation.UPDATE:
            sets = ", ".join(
                f"{name} = {name} + ?" if name in collections else f"{name} = ?"
                for name in change.values
            )
            statements.append(
                (
                    f"UPDATE {table} {using} SET {sets} WHERE {where}",
                    [*using_params, *change.values.values(), *key_params],
                )
            )
        else:
            raise ValueError(f"operation {write.operation.name} is not a base write")
    return statements
