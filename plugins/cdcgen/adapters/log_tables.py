"""Describe a CDC log table from the driver's schema metadata and the CDC catalog.

Columns and the base table's partition key come from the driver's metadata (refreshed
first: the table may be minutes old), the TTL and the partitioner from
:class:`~cdcgen.adapters.cdc_tables.CdcCatalog`, the one place that reads a table's CDC
options. The result is the pure :class:`~cdcgen.core.log_table.LogTable` record.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.cdc_tables import CdcCatalog
from cdcgen.core.cdc_log import LogPartitioner, TableRef
from cdcgen.core.errors import LogTableError
from cdcgen.core.log_table import LogTable
from cdcgen.schema import SourceSchema

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient


def _table_meta(client: CqlClient, keyspace: str, name: str) -> Any:
    cluster = client.cluster
    # A missing table makes the refresh fail; the caller reports it by name.
    with contextlib.suppress(Exception):
        cluster.refresh_table_metadata(keyspace, name)
    ks = cluster.metadata.keyspaces.get(keyspace)
    return None if ks is None else ks.tables.get(name)


def describe_log_table(
    client: CqlClient,
    table: TableRef,
    schema: SourceSchema,
    partitioner: LogPartitioner = LogPartitioner.AUTO,
) -> LogTable:
    """Columns, base partition key, TTL and partitioner of ``table``'s CDC log.

    ``partitioner``: ``auto`` asks the catalog; ``cdc`` or ``murmur3`` is taken as given.
    """
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
        partitioner=catalog.partitioner(table, partitioner),
    )
