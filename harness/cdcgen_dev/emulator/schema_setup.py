"""Create the emulated ScyllaDB metadata tables (and the emulator's own) in Cassandra.

Cassandra refuses user tables in its ``system*`` keyspaces, so every ScyllaDB table lives
under the prefixed keyspace :class:`~cdcgen.schema.SourceSchema` maps it to, with
ScyllaDB's exact columns (:data:`cdcgen.schema.TABLE_COLUMNS`). Keyspaces use
SimpleStrategy with ``RF = min(3, nodes)``: on the three-node sandbox the metadata
survives one stopped node and QUORUM reads see every committed write, as on a real
cluster. Everything is ``IF NOT EXISTS``: running it again is harmless.

The legacy V1 tables are created only on request: a ScyllaDB that never ran 4.3 has no
``cdc_streams_descriptions`` table, and its absence is itself a signal readers use
(the 4.3 -> 4.4 switch rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdcgen.core.identifiers import check_identifier
from cdcgen.schema import (
    TABLE_COLUMNS,
    SourceSchema,
    Table,
    create_keyspace_cql,
    create_table_cql,
)
from cdcgen_dev.emulator.state import SANDBOX_TABLE_COLUMNS, state_keyspace, state_table

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient

LEGACY_V1_TABLES = frozenset(
    {Table.CDC_GENERATION_DESCRIPTIONS_V1, Table.CDC_STREAMS_DESCRIPTIONS_V1}
)


DDL_TIMEOUT_SECONDS = 60.0
"""Schema changes wait for every node to agree; on a busy two-core machine that is slow."""


def ddl(client: CqlClient, cql: str) -> None:
    """Run one schema statement (no values: names are allow-listed by the caller)."""
    client.session.execute(cql, timeout=DDL_TIMEOUT_SECONDS)


def replication_factor(client: CqlClient) -> int:
    """``min(3, nodes)``: as many replicas as the sandbox cluster can hold, at most three."""
    return max(1, min(3, client.node_count))


def create_keyspace(client: CqlClient, keyspace: str, rf: int | None = None) -> None:
    """``CREATE KEYSPACE IF NOT EXISTS`` with SimpleStrategy, RF ``min(3, nodes)`` by default."""
    factor = int(replication_factor(client) if rf is None else rf)
    replication = {"class": "SimpleStrategy", "replication_factor": factor}
    ddl(client, create_keyspace_cql(keyspace, replication))


def metadata_tables(*, legacy_v1: bool) -> list[Table]:
    return [t for t in TABLE_COLUMNS if legacy_v1 or t not in LEGACY_V1_TABLES]


def ensure_schema(client: CqlClient, schema: SourceSchema, *, legacy_v1: bool = False) -> None:
    """Create the prefixed keyspaces, ScyllaDB's metadata tables and the sandbox tables."""
    state_keyspace(schema)  # refuses the unprefixed schema before anything is created
    tables = metadata_tables(legacy_v1=legacy_v1)
    for keyspace in sorted({schema.keyspace(t) for t in tables}):
        create_keyspace(client, keyspace)
    for table in tables:
        ddl(client, create_table_cql(table, schema.name(table)))
    for name, columns in SANDBOX_TABLE_COLUMNS.items():
        ddl(client, f"CREATE TABLE IF NOT EXISTS {state_table(schema, name)} ({columns})")


def drop_keyspaces(client: CqlClient, schema: SourceSchema) -> None:
    """Drop every prefixed keyspace of this schema (tests and ``sandbox reset``)."""
    state_keyspace(schema)
    for keyspace in schema.keyspaces():
        ddl(client, f"DROP KEYSPACE IF EXISTS {check_identifier(keyspace, 'keyspace')}")
