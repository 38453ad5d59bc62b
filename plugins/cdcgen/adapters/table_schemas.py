"""A cluster's tables as replication reads and alters them, over cassandra-driver
(:class:`cdcgen.ports.TableSchemas`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.identifiers import quote
from cdcgen.core.table_definition import TableDefinition, add_column_cql
from cdcgen.ports import ClusterIdentity

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient

log = logging.getLogger(__name__)

#: Schema changes wait for the cluster's nodes to agree on the new schema.
DDL_TIMEOUT_SECONDS = 120.0


class CqlTableSchemas:
    """The tables of the cluster ``client`` is connected to."""

    def __init__(self, client: CqlClient) -> None:
        self.client = client

    def identity(self) -> ClusterIdentity:
        metadata = self.client.cluster.metadata
        hosts = frozenset(str(h.host_id) for h in metadata.all_hosts() if h.host_id is not None)
        return ClusterIdentity(str(metadata.cluster_name), hosts)

    def definition(self, table: TableRef) -> TableDefinition | None:
        """The driver's current definition of ``table``, read afresh."""
        client = self.client
        client.cluster.refresh_table_metadata(table.keyspace, table.table)
        keyspace = client.cluster.metadata.keyspaces.get(table.keyspace)
        metadata = None if keyspace is None else keyspace.tables.get(table.table)
        if metadata is None:
            return None
        columns = ", ".join(quote(name) for name in metadata.columns)
        select = client.prepared(
            f"SELECT {columns} FROM {quote(table.keyspace)}.{quote(table.table)}"
        )
        cqltypes = {column[2]: column[3] for column in select.result_metadata}
        return definition_of(table, metadata, keyspace, cqltypes)

    def add_column(self, table: TableRef, column: str, cql_type: str, static: bool) -> None:
        from cassandra import InvalidRequest

        statement = add_column_cql(table, column, cql_type, static)
        log.info("%s: adding column %s: %s", table, column, statement)
        try:
            self.client.session.execute(statement, timeout=DDL_TIMEOUT_SECONDS)
        except InvalidRequest as exc:  # added meanwhile by another run: as wanted
            if "already exist" not in str(exc).lower():
                raise

    def is_empty(self, table: TableRef, key_column: str) -> bool:
        qualified = f"{quote(table.keyspace)}.{quote(table.table)}"
        return (
            self.client.execute(f"SELECT {quote(key_column)} FROM {qualified} LIMIT 1").one()
            is None
        )


def definition_of(
    ref: TableRef, table: Any, keyspace: Any, cqltypes: dict[str, type]
) -> TableDefinition:
    """From the driver's ``TableMetadata``, ``KeyspaceMetadata`` and the type classes of
    a statement's result metadata."""
    return TableDefinition(
        ref,
        tuple(c.name for c in table.partition_key),
        tuple(c.name for c in table.clustering_key),
        {name: str(c.cql_type) for name, c in table.columns.items()},
        frozenset(name for name, c in table.columns.items() if c.is_static),
        {
            name: tuple(zip(udt.field_names, map(str, udt.field_types), strict=True))
            for name, udt in keyspace.user_types.items()
        },
        cqltypes,
        frozenset(c.name for c in table.clustering_key if c.is_reversed),
        int(table.options.get("default_time_to_live") or 0),
    )
