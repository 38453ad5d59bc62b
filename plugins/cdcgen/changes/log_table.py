"""What the pipeline must know about one CDC log table before reading it.

Its columns (in schema order, the lake keeps them all), the base table's partition key
(the row checks hash it), the CDC TTL (reads older than it would miss expired rows) and
how the cluster places its partitions (:class:`~cdcgen.core.cdc_log.LogPartitioner`).
Read once on the Spark driver and shipped to the tasks as this small, picklable record.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.cdc_tables import CdcCatalog
from cdcgen.changes.settings import ChangesSettings
from cdcgen.core.cdc_log import (
    KEY_COLUMNS,
    OPERATION,
    STREAM_ID,
    TIME,
    LogPartitioner,
    LogTableError,
    TableRef,
    quote_column,
)
from cdcgen.schema import SourceSchema

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient


@dataclass(frozen=True)
class LogTable:
    table: TableRef
    columns: tuple[str, ...]
    partition_key: tuple[str, ...]
    ttl: timedelta | None
    partitioner: LogPartitioner

    def __post_init__(self) -> None:
        missing = [c for c in (*KEY_COLUMNS, OPERATION) if c not in self.columns]
        if missing:
            raise LogTableError(f"{self.table.qualified_log} lacks log columns {missing}")
        absent = [c for c in self.partition_key if c not in self.columns]
        if not self.partition_key or absent:
            raise LogTableError(
                f"{self.table.qualified_log} does not carry the base partition key "
                f"{list(self.partition_key)} (missing {absent})"
            )
        if self.partitioner is LogPartitioner.AUTO:
            raise LogTableError("resolve the log partitioner before describing the table")

    @property
    def select_list(self) -> str:
        return ", ".join(quote_column(c) for c in self.columns)

    def window_query(self) -> str:
        """The one per-stream query: a single partition, a time slice, never a scan."""
        return (
            f"SELECT {self.select_list} FROM {self.table.qualified_log} "
            f'WHERE "{STREAM_ID}" = ? AND "{TIME}" >= minTimeuuid(?) AND "{TIME}" < minTimeuuid(?)'
        )

    def count_query(self) -> str:
        return (
            f"SELECT COUNT(*) FROM {self.table.qualified_log} "
            f'WHERE "{STREAM_ID}" = ? AND "{TIME}" >= minTimeuuid(?) AND "{TIME}" < minTimeuuid(?)'
        )


def _table_meta(client: CqlClient, keyspace: str, name: str) -> Any:
    cluster = client.cluster
    # A missing table makes the refresh fail; the caller reports it by name.
    with contextlib.suppress(Exception):
        cluster.refresh_table_metadata(keyspace, name)
    ks = cluster.metadata.keyspaces.get(keyspace)
    return None if ks is None else ks.tables.get(name)


def describe_log_table(
    client: CqlClient, table: TableRef, settings: ChangesSettings, schema: SourceSchema
) -> LogTable:
    """Columns, base partition key, TTL and partitioner of ``table``'s CDC log."""
    log_meta = _table_meta(client, table.keyspace, table.log_table)
    if log_meta is None:
        raise LogTableError(
            f"{table} has no CDC log table {table.qualified_log}: is CDC enabled on it?"
        )
    base_meta = _table_meta(client, table.keyspace, table.table)
    if base_meta is None:
        raise LogTableError(f"base table {table} of {table.qualified_log} does not exist")
    catalog = CdcCatalog(client, schema)
    return LogTable(
        table=table,
        columns=tuple(log_meta.columns),
        partition_key=tuple(c.name for c in base_meta.partition_key),
        ttl=catalog.ttl(table),
        partitioner=catalog.partitioner(table, settings.log_partitioner),
    )
