"""The emulator's own state: the simulated nodes, their clocks, and what each "knows".

ScyllaDB keeps a cluster's membership and every node's loaded generations in memory and in
node-local tables; Cassandra has neither, and the emulator runs as short-lived commands
(``cdcgen sandbox join-node``, ``workload``), so that state lives in sandbox-only tables
next to the emulated metadata, in the prefixed ``system`` keyspace:

* ``sandbox_nodes``: each simulated node (name, host id, tokens, shard count,
  ignore_msb, the real Cassandra host standing in for it, up/down, clock skew);
* ``sandbox_generations``: every generation (or tablet stream set) the emulated
  coordinators know: timestamp, ID, source mode, whether it was committed and whether
  the nodes could load it, and the description they route writes with. This is the
  emulated ``cdc::metadata``, independent of what the readers find in the metadata tables,
  which is what lets tests compare the two;
* ``sandbox_cdc_tables``: the CDC-enabled base tables, their CDC TTL (ScyllaDB's ``cdc``
  table option, which Cassandra lacks) and, for tablets tables, the log table id.

The emulator refuses an empty keyspace prefix: it must never write a real cluster's
``system`` keyspace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

from cdcgen.core.identifiers import check_identifier
from cdcgen.core.stream_id import StreamId
from cdcgen.core.tablets import TabletStreamSet
from cdcgen.core.time import EPOCH, naive_as_utc
from cdcgen.core.topology import Node, TopologyDescription
from cdcgen.core.topology_json import description_from_json
from cdcgen.schema import SourceSchema, Table
from cdcgen_dev.emulator.cql_util import execute

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient

SANDBOX_NODES = "sandbox_nodes"
SANDBOX_GENERATIONS = "sandbox_generations"
SANDBOX_CDC_TABLES = "sandbox_cdc_tables"

VNODES_SCOPE = "vnodes"

SANDBOX_TABLE_COLUMNS: dict[str, str] = {
    SANDBOX_NODES: (
        "name text PRIMARY KEY, host_id uuid, address text, tokens frozen<list<bigint>>, "
        "shard_count int, ignore_msb int, up boolean, clock_skew_us bigint, joined_at timestamp"
    ),
    SANDBOX_GENERATIONS: (
        "scope text, timestamp timestamp, id text, mode text, committed boolean, loaded boolean, "
        "description text, faults list<text>, PRIMARY KEY (scope, timestamp, id)"
    ),
    SANDBOX_CDC_TABLES: (
        "keyspace_name text, table_name text, spec text, cdc_ttl int, log_table_id uuid, "
        "tablet_count int, PRIMARY KEY (keyspace_name, table_name)"
    ),
}


class EmulatorError(Exception):
    """The sandbox cannot do what was asked (unknown node, no generation yet, ...)."""


def state_keyspace(schema: SourceSchema) -> str:
    """The prefixed ``system`` keyspace; refuses the unprefixed (real ScyllaDB) schema."""
    if not schema.keyspace_prefix:
        raise EmulatorError(
            "the sandbox emulator only writes under a keyspace prefix (e.g. 'sandbox_'); "
            "an empty prefix would target a real cluster's system keyspaces"
        )
    return check_identifier(schema.keyspace(Table.TOPOLOGY), "keyspace")


def state_table(schema: SourceSchema, table: str) -> str:
    if table not in SANDBOX_TABLE_COLUMNS:
        raise ValueError(f"unknown sandbox table {table!r}")
    return f"{state_keyspace(schema)}.{table}"


@dataclass(frozen=True, slots=True)
class SimNode:
    """A simulated ScyllaDB node."""

    name: str
    host_id: UUID
    address: str
    tokens: tuple[int, ...]
    shard_count: int
    ignore_msb: int
    up: bool = True
    clock_skew: timedelta = timedelta(0)
    joined_at: datetime | None = None

    def as_core_node(self) -> Node:
        return Node(self.name, self.shard_count, self.ignore_msb, self.tokens)


@dataclass(frozen=True, slots=True)
class GenerationRecord:
    """A generation (or tablet stream set) as the emulated nodes know it."""

    scope: str
    timestamp: datetime
    id: str
    mode: str
    committed: bool
    loaded: bool
    description_json: str | None
    faults: tuple[str, ...] = ()

    def description(self) -> TopologyDescription:
        """The vnode description the nodes route with (only when ``loaded``)."""
        if self.description_json is None:
            raise EmulatorError(f"generation {self.id} at {self.timestamp} has no description")
        return description_from_json(json.loads(self.description_json))

    def tablet_streams(self) -> TabletStreamSet:
        """The tablet stream set (scope ``tablets:<ks>.<table>``)."""
        if self.description_json is None:
            raise EmulatorError(f"stream set at {self.timestamp} has no streams")
        hexes = json.loads(self.description_json)["streams"]
        return TabletStreamSet(self.timestamp, tuple(StreamId.from_hex(h) for h in hexes))


def tablets_scope(keyspace: str, table: str) -> str:
    return f"tablets:{keyspace}.{table}"


@dataclass(frozen=True, slots=True)
class CdcTableRecord:
    keyspace: str
    table: str
    spec_json: str
    cdc_ttl: int
    log_table_id: UUID | None
    tablet_count: int | None

    @property
    def uses_tablets(self) -> bool:
        return self.tablet_count is not None


def _skew_us(skew: timedelta) -> int:
    return (skew.days * 86_400 + skew.seconds) * 1_000_000 + skew.microseconds


def save_node(client: CqlClient, schema: SourceSchema, node: SimNode) -> None:
    execute(
        client,
        f"INSERT INTO {state_table(schema, SANDBOX_NODES)} (name, host_id, address, tokens, "
        "shard_count, ignore_msb, up, clock_skew_us, joined_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            node.name,
            node.host_id,
            node.address,
            list(node.tokens),
            node.shard_count,
            node.ignore_msb,
            node.up,
            _skew_us(node.clock_skew),
            node.joined_at,
        ),
    )


def delete_node(client: CqlClient, schema: SourceSchema, name: str) -> None:
    execute(client, f"DELETE FROM {state_table(schema, SANDBOX_NODES)} WHERE name = ?", (name,))


def load_nodes(client: CqlClient, schema: SourceSchema) -> list[SimNode]:
    """Every simulated node, in join order (then name)."""
    rows = execute(client, f"SELECT * FROM {state_table(schema, SANDBOX_NODES)}")
    nodes = [
        SimNode(
            name=row.name,
            host_id=row.host_id,
            address=row.address,
            tokens=tuple(row.tokens or ()),
            shard_count=row.shard_count,
            ignore_msb=row.ignore_msb,
            up=bool(row.up),
            clock_skew=timedelta(microseconds=row.clock_skew_us or 0),
            joined_at=naive_as_utc(row.joined_at) if row.joined_at else None,
        )
        for row in rows
    ]
    return sorted(nodes, key=lambda n: (n.joined_at is None, n.joined_at or EPOCH, n.name))


def save_generation(client: CqlClient, schema: SourceSchema, record: GenerationRecord) -> None:
    execute(
        client,
        f"INSERT INTO {state_table(schema, SANDBOX_GENERATIONS)} (scope, timestamp, id, mode, "
        "committed, loaded, description, faults) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            record.scope,
            record.timestamp,
            record.id,
            record.mode,
            record.committed,
            record.loaded,
            record.description_json,
            list(record.faults),
        ),
    )


def load_generations(
    client: CqlClient, schema: SourceSchema, scope: str = VNODES_SCOPE
) -> list[GenerationRecord]:
    """The generations of one scope, oldest first."""
    rows = execute(
        client,
        f"SELECT * FROM {state_table(schema, SANDBOX_GENERATIONS)} WHERE scope = ?",
        (scope,),
    )
    return [
        GenerationRecord(
            scope=row.scope,
            timestamp=naive_as_utc(row.timestamp),
            id=row.id,
            mode=row.mode,
            committed=bool(row.committed),
            loaded=bool(row.loaded),
            description_json=row.description,
            faults=tuple(row.faults or ()),
        )
        for row in rows
    ]


def save_cdc_table(client: CqlClient, schema: SourceSchema, record: CdcTableRecord) -> None:
    execute(
        client,
        f"INSERT INTO {state_table(schema, SANDBOX_CDC_TABLES)} (keyspace_name, table_name, spec, "
        "cdc_ttl, log_table_id, tablet_count) VALUES (?, ?, ?, ?, ?, ?)",
        (
            record.keyspace,
            record.table,
            record.spec_json,
            record.cdc_ttl,
            record.log_table_id,
            record.tablet_count,
        ),
    )


def _cdc_table(row: Any) -> CdcTableRecord:
    return CdcTableRecord(
        keyspace=row.keyspace_name,
        table=row.table_name,
        spec_json=row.spec,
        cdc_ttl=row.cdc_ttl,
        log_table_id=row.log_table_id,
        tablet_count=row.tablet_count,
    )


def load_cdc_tables(client: CqlClient, schema: SourceSchema) -> list[CdcTableRecord]:
    rows = execute(client, f"SELECT * FROM {state_table(schema, SANDBOX_CDC_TABLES)}")
    return sorted((_cdc_table(r) for r in rows), key=lambda r: (r.keyspace, r.table))


def load_cdc_table(
    client: CqlClient, schema: SourceSchema, keyspace: str, table: str
) -> CdcTableRecord:
    rows = list(
        execute(
            client,
            f"SELECT * FROM {state_table(schema, SANDBOX_CDC_TABLES)} "
            "WHERE keyspace_name = ? AND table_name = ?",
            (keyspace, table),
        )
    )
    if not rows:
        raise EmulatorError(
            f"{keyspace}.{table} is not a sandbox CDC table; create it first "
            "(cdcgen sandbox create-table)"
        )
    return _cdc_table(rows[0])
