"""The source cluster's CDC-enabled tables: which they are, their CDC TTL, how their log
is partitioned and when it was created. The one place any part of the pipeline asks.

ScyllaDB keeps a base table's CDC options (``enabled``, ``ttl``, ...) in the ``cdc`` map
of its row in ``system_schema.scylla_tables``, and each table's partitioner in the same
table (``com.scylladb.dht.CDCPartitioner`` for every log table). The table is read under
the configured :class:`~cdcgen.schema.SourceSchema`, so a sandbox that keeps a copy of
it under a keyspace prefix is read the same way. A log table's creation time comes from
its id in ``system_schema.tables`` (a time UUID), as ScyllaDB's V1 rewrite reads it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

from cdcgen.core.cdc_log import (
    MURMUR3_PARTITIONER,
    CdcTable,
    LogPartitioner,
    LogTableError,
    TableRef,
    base_table_of,
    micros_of_timeuuid,
)
from cdcgen.core.time import from_micros
from cdcgen.schema import SourceSchema, Table

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient

#: A table whose CDC options say nothing about the TTL gets ScyllaDB's default.
SCYLLA_DEFAULT_CDC_TTL = 86_400


def cdc_enabled(options: Any) -> bool:
    return str(dict(options or {}).get("enabled", "false")).lower() == "true"


def uuid_time(value: UUID) -> datetime | None:
    """When a time UUID (version 1) was made; ``None`` for other versions."""
    return from_micros(micros_of_timeuuid(value)) if value.version == 1 else None


class CdcCatalog:
    """Reads the catalog through a connected client, under a source schema."""

    def __init__(self, client: CqlClient, schema: SourceSchema) -> None:
        self.client = client
        self.schema = schema
        self.scylla_tables = schema.name(Table.SCYLLA_TABLES)

    def _rows(self, keyspace: str | None = None) -> list[Any]:
        from cassandra import InvalidRequest

        query = f"SELECT keyspace_name, table_name, cdc, partitioner FROM {self.scylla_tables}"
        params: tuple[str, ...] = ()
        if keyspace is not None:
            query += " WHERE keyspace_name = %s"
            params = (keyspace,)
        try:
            return list(self.client.execute(query, params))
        except InvalidRequest as exc:
            raise LogTableError(
                f"{self.scylla_tables} cannot be read ({exc}): the source is not a ScyllaDB "
                "cluster, or its keyspace prefix is wrong (CDCGEN_SOURCE_KEYSPACE_PREFIX)"
            ) from exc

    def tables(self, keyspaces: Iterable[str] = ()) -> list[CdcTable]:
        """Every CDC-enabled base table (optionally only in ``keyspaces``), sorted."""
        wanted = set(keyspaces)
        found = []
        for row in self._rows():
            if wanted and row.keyspace_name not in wanted:
                continue
            if not cdc_enabled(row.cdc) or base_table_of(row.table_name) is not None:
                continue
            try:
                ref = TableRef(row.keyspace_name, row.table_name)
            except ValueError:
                continue  # a name this pipeline cannot address safely (quoted identifiers)
            found.append(self._cdc_table(ref, row.cdc))
        return sorted(found, key=lambda t: t.name)

    def table(self, table: TableRef) -> CdcTable:
        """One table's CDC settings; :class:`LogTableError` if CDC is not enabled on it."""
        for row in self._rows(table.keyspace):
            if row.table_name == table.table and cdc_enabled(row.cdc):
                return self._cdc_table(table, row.cdc)
        raise LogTableError(
            f"{table} is not CDC-enabled according to {self.scylla_tables}; enable it with "
            "ALTER TABLE ... WITH cdc = {'enabled': true}"
        )

    def ttl(self, table: TableRef) -> timedelta | None:
        """The table's CDC TTL; ``None`` when it is 0 (rows never expire)."""
        seconds = self.table(table).ttl_seconds
        return timedelta(seconds=seconds) if seconds > 0 else None

    def partitioner(self, table: TableRef, wanted: LogPartitioner) -> LogPartitioner:
        """``auto``: the log table's partitioner as the catalog records it; a log table
        without a row is ScyllaDB's (every CDC log uses the CDC partitioner)."""
        if wanted is not LogPartitioner.AUTO:
            return wanted
        for row in self._rows(table.keyspace):
            if row.table_name == table.log_table:
                if row.partitioner == MURMUR3_PARTITIONER:
                    return LogPartitioner.MURMUR3
                break
        return LogPartitioner.CDC

    def _cdc_table(self, table: TableRef, options: Any) -> CdcTable:
        ttl = dict(options or {}).get("ttl")
        seconds = int(ttl) if ttl not in (None, "") else SCYLLA_DEFAULT_CDC_TTL
        return CdcTable(table, seconds, self._log_created(table))

    def _log_created(self, table: TableRef) -> datetime | None:
        rows = list(
            self.client.execute(
                "SELECT id FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
                (table.keyspace, table.log_table),
            )
        )
        return uuid_time(rows[0].id) if rows and rows[0].id is not None else None
