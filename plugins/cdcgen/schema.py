"""Where ScyllaDB keeps CDC metadata, and where this project finds it.

ScyllaDB stores generations in its ``system*`` keyspaces.  Against a real cluster
the pipeline reads those names; against the sandbox (Apache Cassandra, which
refuses user tables in its own ``system*`` keyspaces) the same logical tables live
under prefixed keyspaces.  A :class:`SourceSchema` is that mapping: every adapter
asks it for a physical name instead of hard-coding one, so the same code runs on
both.  Columns and types are exactly ScyllaDB's (design doc section 5), which is
what lets the sandbox stand in for a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from cdcgen.core.identifiers import check_identifier


class Table(StrEnum):
    """ScyllaDB's CDC metadata tables, by their real ``keyspace.table`` names."""

    # raft-based topology
    CDC_GENERATIONS_V3 = "system.cdc_generations_v3"
    TOPOLOGY = "system.topology"
    # gossip-based topology
    CDC_GENERATION_DESCRIPTIONS_V2 = "system_distributed_everywhere.cdc_generation_descriptions_v2"
    CDC_LOCAL = "system.cdc_local"
    # legacy V1 (ScyllaDB 4.3)
    CDC_GENERATION_DESCRIPTIONS_V1 = "system_distributed.cdc_generation_descriptions"
    CDC_STREAMS_DESCRIPTIONS_V1 = "system_distributed.cdc_streams_descriptions"
    # user-facing description tables (what this project publishes)
    CDC_STREAMS_DESCRIPTIONS_V2 = "system_distributed.cdc_streams_descriptions_v2"
    CDC_GENERATION_TIMESTAMPS = "system_distributed.cdc_generation_timestamps"
    # tablets
    CDC_STREAMS_STATE = "system.cdc_streams_state"
    CDC_STREAMS_HISTORY = "system.cdc_streams_history"
    # Every table's schema row: a base table's CDC options are its ``cdc`` extension
    TABLES = "system_schema.tables"
    # ScyllaDB's per-table metadata: the partitioner of log tables (its ``cdc`` column
    # has been left empty since ScyllaDB 4.0)
    SCYLLA_TABLES = "system_schema.scylla_tables"
    # the ring in gossip mode: each node's tokens (the local node's, then its peers')
    LOCAL = "system.local"
    PEERS = "system.peers"

    @property
    def keyspace(self) -> str:
        return self.value.split(".", 1)[0]

    @property
    def name_only(self) -> str:
        return self.value.split(".", 1)[1]


# Column definitions exactly as ScyllaDB declares them.  The sandbox creates
# these; readers rely on the names and types.
TABLE_COLUMNS: dict[Table, str] = {
    Table.CDC_GENERATIONS_V3: (
        "key text, id timeuuid, range_end bigint, streams frozen<set<blob>>, "
        "ignore_msb tinyint, PRIMARY KEY (key, id, range_end)"
    ),
    # ``system_keyspace::topology()``: one row per node (what ``load_topology_state``
    # reads), and the topology state machine's static columns.
    Table.TOPOLOGY: (
        "key text, host_id uuid, datacenter text, rack text, tokens set<text>, "
        "node_state text, release_version text, topology_request text, replaced_id uuid, "
        "rebuild_option text, num_tokens int, tokens_string text, shard_count int, "
        "ignore_msb int, cleanup_status text, supported_features set<text>, "
        "request_id timeuuid, "
        "ignore_nodes set<uuid> static, "
        "new_cdc_generation_data_uuid timeuuid static, "
        "version bigint static, fence_version bigint static, transition_state text static, "
        "committed_cdc_generations set<tuple<timestamp, timeuuid>> static, "
        "unpublished_cdc_generations set<tuple<timestamp, timeuuid>> static, "
        "global_topology_request text static, global_topology_request_id timeuuid static, "
        "enabled_features set<text> static, session uuid static, "
        "tablet_balancing_enabled boolean static, upgrade_state text static, "
        "PRIMARY KEY (key, host_id)"
    ),
    # The columns of ``system.local`` / ``system.peers`` the ring is read from.
    Table.LOCAL: (
        "key text PRIMARY KEY, host_id uuid, data_center text, rack text, "
        "release_version text, tokens set<text>"
    ),
    Table.PEERS: (
        "peer inet PRIMARY KEY, host_id uuid, data_center text, rack text, "
        "release_version text, tokens set<text>"
    ),
    Table.CDC_GENERATION_DESCRIPTIONS_V2: (
        "id uuid, range_end bigint, ignore_msb tinyint, num_ranges int static, "
        "streams frozen<set<blob>>, PRIMARY KEY (id, range_end)"
    ),
    Table.CDC_LOCAL: "key text PRIMARY KEY, streams_timestamp timestamp, uuid uuid",
    Table.CDC_GENERATION_DESCRIPTIONS_V1: (
        "time timestamp PRIMARY KEY, "
        "description frozen<list<frozen<tuple<bigint, frozen<list<blob>>, tinyint>>>>, "
        "expired timestamp"
    ),
    Table.CDC_STREAMS_DESCRIPTIONS_V1: (
        "time timestamp PRIMARY KEY, streams frozen<set<blob>>, expired timestamp"
    ),
    Table.CDC_STREAMS_DESCRIPTIONS_V2: (
        "time timestamp, range_end bigint, streams frozen<set<blob>>, PRIMARY KEY (time, range_end)"
    ),
    Table.CDC_GENERATION_TIMESTAMPS: (
        "key text, time timestamp, expired timestamp, PRIMARY KEY (key, time)"
    ),
    Table.CDC_STREAMS_STATE: (
        "table_id uuid, last_token bigint, stream_id blob, timestamp timestamp static, "
        "PRIMARY KEY (table_id, last_token)"
    ),
    # The columns of ScyllaDB's system_schema.tables this project reads.
    Table.TABLES: (
        "keyspace_name text, table_name text, id uuid, extensions map<text, blob>, "
        "PRIMARY KEY (keyspace_name, table_name)"
    ),
    Table.SCYLLA_TABLES: (
        "keyspace_name text, table_name text, version uuid, cdc map<text, text>, "
        "partitioner text, PRIMARY KEY (keyspace_name, table_name)"
    ),
    Table.CDC_STREAMS_HISTORY: (
        "table_id uuid, timestamp timestamp, stream_state tinyint, last_token bigint, "
        "stream_id blob, PRIMARY KEY (table_id, timestamp, stream_state, last_token)"
    ),
}

# Table options that belong to the definition (not to the sandbox's taste).
TABLE_OPTIONS: dict[Table, str] = {
    Table.CDC_GENERATION_TIMESTAMPS: "CLUSTERING ORDER BY (time DESC)",
}

#: ScyllaDB's virtual tables ``system.cdc_timestamps`` / ``system.cdc_streams`` (what a
#: tablets table's stream sets look like to consumers), as real tables a target keyspace
#: can hold: name -> (columns and key, table options).
TABLET_TIMESTAMPS = "cdc_timestamps"
TABLET_STREAMS = "cdc_streams"
TABLET_VIEWS: dict[str, tuple[str, str]] = {
    TABLET_TIMESTAMPS: (
        "keyspace_name text, table_name text, timestamp timestamp, "
        "PRIMARY KEY ((keyspace_name, table_name), timestamp)",
        "CLUSTERING ORDER BY (timestamp DESC)",
    ),
    TABLET_STREAMS: (
        "keyspace_name text, table_name text, timestamp timestamp, stream_state tinyint, "
        "stream_id blob, "
        "PRIMARY KEY ((keyspace_name, table_name), timestamp, stream_state, stream_id)",
        "CLUSTERING ORDER BY (timestamp ASC, stream_state ASC, stream_id ASC)",
    ),
}

CDC_GENERATIONS_V3_KEY = "cdc_generations"
TOPOLOGY_KEY = "topology"
GENERATION_TIMESTAMPS_KEY = "timestamps"
CDC_LOCAL_KEY = "cdc_local"
CDC_LOCAL_REWRITTEN_KEY = "rewritten"


@dataclass(frozen=True)
class SourceSchema:
    """Maps ScyllaDB's logical table names to the physical ones to query.

    ``keyspace_prefix`` is empty for a real ScyllaDB; a development sandbox keeps its
    copies of ScyllaDB's tables under a prefix, ``system.local`` and ``system.peers``
    included (the sandbox server's own hold its own ring, not the emulated one).
    """

    keyspace_prefix: str = ""

    def __post_init__(self) -> None:
        if self.keyspace_prefix:
            check_identifier(self.keyspace_prefix.rstrip("_") or "x", "keyspace prefix")

    @classmethod
    def scylla(cls) -> SourceSchema:
        return cls("")

    def keyspace(self, table: Table) -> str:
        return self.keyspace_prefix + table.keyspace

    def name(self, table: Table) -> str:
        """The fully qualified physical name, safe to place into CQL text."""
        return f"{self.keyspace(table)}.{table.name_only}"

    def keyspaces(self) -> list[str]:
        """Every physical keyspace holding a mapped table."""
        return sorted({self.keyspace(t) for t in TABLE_COLUMNS})


def create_table_cql(table: Table, physical_name: str) -> str:
    """``CREATE TABLE IF NOT EXISTS`` text for one metadata table under a physical name."""
    keyspace, name = physical_name.split(".", 1)
    check_identifier(keyspace, "keyspace")
    check_identifier(name, "table")
    options = TABLE_OPTIONS.get(table)
    suffix = f" WITH {options}" if options else ""
    return f"CREATE TABLE IF NOT EXISTS {keyspace}.{name} ({TABLE_COLUMNS[table]}){suffix}"


def create_keyspace_cql(keyspace: str, replication: Mapping[str, object]) -> str:
    """``CREATE KEYSPACE IF NOT EXISTS`` text: the name allow-listed, every replication key
    and value a string literal with its quotes doubled, so an option cannot close its
    literal and add CQL of its own."""
    from cassandra.encoder import cql_quote

    options = ", ".join(f"{cql_quote(str(k))}: {cql_quote(str(v))}" for k, v in replication.items())
    return (
        f"CREATE KEYSPACE IF NOT EXISTS {check_identifier(keyspace, 'keyspace')} "
        f"WITH replication = {{{options}}}"
    )
