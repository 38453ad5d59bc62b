"""The source cluster's CDC-enabled tables: which they are, their CDC TTL, how their log
is partitioned and when it was created. The one place any part of the pipeline asks.

ScyllaDB keeps a base table's CDC options (``enabled``, ``ttl``, ...) in the ``cdc``
schema extension of its ``system_schema.tables`` row (:mod:`cdcgen.core.cdc_extension`;
the ``cdc`` column of ``system_schema.scylla_tables`` has been left empty since 4.0), and
each table's partitioner in ``system_schema.scylla_tables`` (``com.scylladb.dht.
CDCPartitioner`` for every log table). Both are read under the configured
:class:`~cdcgen.schema.SourceSchema`, so a sandbox that keeps copies of them under a
keyspace prefix is read the same way. A log table's creation time comes from its id in
the cluster's own ``system_schema.tables`` (a time UUID), as ScyllaDB's V1 rewrite reads it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

from cdcgen.core.cdc_extension import cdc_options_of
from cdcgen.core.cdc_log import (
    MURMUR3_PARTITIONER,
    CdcTable,
    LogPartitioner,
    TableRef,
    base_table_of,
    micros_of_timeuuid,
)
from cdcgen.core.errors import BadCdcExtension, LogTableError
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

    def _select(self, table: Table, columns: str, keyspace: str | None) -> list[Any]:
        from cassandra import InvalidRequest

        name = self.schema.name(table)
        query = f"SELECT {columns} FROM {name}"
        params: tuple[str, ...] = ()
        if keyspace is not None:
            query += " WHERE keyspace_name = %s"
            params = (keyspace,)
        try:
            return list(self.client.execute(query, params))
        except InvalidRequest as exc:
            raise LogTableError(
                f"{name} cannot be read ({exc}): the source is not a ScyllaDB "
                "cluster, or its keyspace prefix is wrong (CDCGEN_SOURCE_KEYSPACE_PREFIX)"
            ) from exc

    def _rows(self, keyspace: str | None = None) -> list[tuple[str, str, dict[str, str]]]:
        """``(keyspace, table, CDC options)`` of every table (of ``keyspace``)."""
        rows = []
        for row in self._select(Table.TABLES, "keyspace_name, table_name, extensions", keyspace):
            try:
                options = cdc_options_of(row.extensions)
            except BadCdcExtension as exc:
                raise LogTableError(
                    f"{row.keyspace_name}.{row.table_name}: unreadable cdc extension: {exc}"
                ) from None
            rows.append((row.keyspace_name, row.table_name, options))
        return rows

    def tables(self, keyspaces: Iterable[str] = ()) -> list[CdcTable]:
        """Every CDC-enabled base table (optionally only in ``keyspaces``), sorted."""
        wanted = set(keyspaces)
        found = []
        for keyspace, name, options in self._rows():
            if wanted and keyspace not in wanted:
                continue
            if not cdc_enabled(options) or base_table_of(name) is not None:
                continue
            try:
                ref = TableRef(keyspace, name)
            except ValueError:
                continue  # a name this pipeline cannot address safely (quoted identifiers)
            found.append(self._cdc_table(ref, options))
        return sorted(found, key=lambda t: t.name)

    def table(self, table: TableRef) -> CdcTable:
        """One table's CDC settings; :class:`LogTableError` if CDC is not enabled on it."""
        for _, name, options in self._rows(table.keyspace):
            if name == table.table and cdc_enabled(options):
                return self._cdc_table(table, options)
        raise LogTableError(
            f"{table} is not CDC-enabled according to {self.schema.name(Table.TABLES)} "
            "(its cdc extension); enable it with "
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
        for row in self._select(Table.SCYLLA_TABLES, "table_name, partitioner", table.keyspace):
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
