"""Write a generation's metadata the way each kind of ScyllaDB cluster does, in its order.

* raft (``topology_coordinator``): node rows of ``system.topology`` (every column
  ``load_topology_state`` reads), then the data rows of
  ``system.cdc_generations_v3`` (``key = 'cdc_generations'``, one row per range end) with
  ``new_cdc_generation_data_uuid`` pointing at them, and only then the commit: the
  ``(timestamp, id)`` tuple added to the static ``committed_cdc_generations`` (and to
  ``unpublished_cdc_generations`` until someone publishes it);
* gossip (``cdc::generation_service`` before raft topology): the description rows of
  ``system_distributed_everywhere.cdc_generation_descriptions_v2`` with the static
  ``num_ranges``, then the generation ID gossiped and persisted in ``system.cdc_local``
  (``key = 'cdc_local'``); the nodes' tokens in ``system.local`` / ``system.peers``;
* legacy V1 (ScyllaDB 4.3): one row of ``system_distributed.cdc_generation_descriptions``
  holding the whole description (a list of ``(range_end, streams in shard order,
  ignore_msb)``), then the timestamp gossiped (``cdc_local``) and the stream set published
  to ``system_distributed.cdc_streams_descriptions``.

``commit=False`` stops before the commit step; fewer ``rows`` than ``num_ranges`` is the
half-written description of a node that failed mid-insert. Both come from
:mod:`cdcgen_dev.emulator.faults`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from cdcgen.core.cdc_log import timeuuid_from_micros
from cdcgen.core.time import to_micros
from cdcgen.schema import (
    CDC_GENERATIONS_V3_KEY,
    CDC_LOCAL_KEY,
    TOPOLOGY_KEY,
    SourceSchema,
    Table,
)
from cdcgen_dev.emulator.cql_util import execute, execute_many
from cdcgen_dev.emulator.raw import RawRange
from cdcgen_dev.emulator.state import SimNode

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient

SANDBOX_DATACENTER = "datacenter1"
SANDBOX_RACK = "rack1"
SANDBOX_RELEASE = "2025.1.0-sandbox"


#: A few of the features a ScyllaDB node lists in ``supported_features``.
SANDBOX_FEATURES = frozenset({"CDC", "CDC_GENERATIONS_V2", "SUPPORTS_RAFT_CLUSTER_MANAGEMENT"})


def write_topology_nodes(client: CqlClient, schema: SourceSchema, nodes: Sequence[SimNode]) -> None:
    """Per-node rows of ``system.topology`` as the topology coordinator leaves a node that
    finished joining (``topology_node_mutation_builder``): ``node_state`` 'normal',
    ``tokens`` as decimal text, ``num_tokens``, an empty ``tokens_string``, its
    ``shard_count`` and ``ignore_msb``, ``cleanup_status`` 'clean', its
    ``supported_features`` and the ``request_id`` of its join request (a timeuuid). These
    are the columns ``load_topology_state`` requires of every node row."""
    execute_many(
        client,
        f"INSERT INTO {schema.name(Table.TOPOLOGY)} (key, host_id, datacenter, rack, tokens, "
        "node_state, release_version, num_tokens, tokens_string, shard_count, ignore_msb, "
        "cleanup_status, supported_features, request_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            (
                TOPOLOGY_KEY,
                node.host_id,
                SANDBOX_DATACENTER,
                SANDBOX_RACK,
                {str(t) for t in node.tokens},
                "normal",
                SANDBOX_RELEASE,
                len(node.tokens),
                "",
                node.shard_count,
                node.ignore_msb,
                "clean",
                set(SANDBOX_FEATURES),
                _join_request_id(node),
            )
            for node in nodes
        ),
    )


def _join_request_id(node: SimNode) -> UUID:
    """A timeuuid of the node's join (its time, a node-specific clock sequence and node)."""
    micros = to_micros(node.joined_at) if node.joined_at else 0
    return timeuuid_from_micros(micros, random.Random(node.host_id.int))


def write_left_node(client: CqlClient, schema: SourceSchema, node: SimNode) -> None:
    """A decommissioned node's row of ``system.topology``: ``left``, without tokens (the
    row stays, keyed by its host ID)."""
    execute(
        client,
        f"UPDATE {schema.name(Table.TOPOLOGY)} SET node_state = 'left', tokens = null, "
        "num_tokens = 0 WHERE key = ? AND host_id = ?",
        (TOPOLOGY_KEY, node.host_id),
    )


def _peer_address(index: int) -> str:
    return f"127.1.{(index + 1) // 256}.{(index + 1) % 256}"


def write_gossip_ring(
    client: CqlClient,
    schema: SourceSchema,
    nodes: Sequence[SimNode],
    left: Sequence[SimNode] = (),
) -> None:
    """Every node's tokens as a gossip cluster's ``system.local`` / ``system.peers`` show
    them to a client connected to the first node: that node in ``local``, the others in
    ``peers`` (keyed by address; the simulated nodes share the sandbox's few hosts, so
    each peer gets an address of its own under 127.1.0.0/16). The ``left`` nodes' peer
    rows go: the addresses past the remaining peers'."""
    if not nodes:
        return
    for index in range(len(nodes) - 1, len(nodes) - 1 + len(left)):
        execute(
            client,
            f"DELETE FROM {schema.name(Table.PEERS)} WHERE peer = ?",
            (_peer_address(index),),
        )
    first, *peers = nodes
    execute(
        client,
        f"INSERT INTO {schema.name(Table.LOCAL)} (key, host_id, data_center, rack, "
        "release_version, tokens) VALUES (?, ?, ?, ?, ?, ?)",
        (
            "local",
            first.host_id,
            SANDBOX_DATACENTER,
            SANDBOX_RACK,
            SANDBOX_RELEASE,
            {str(t) for t in first.tokens},
        ),
    )
    execute_many(
        client,
        f"INSERT INTO {schema.name(Table.PEERS)} (peer, host_id, data_center, rack, "
        "release_version, tokens) VALUES (?, ?, ?, ?, ?, ?)",
        (
            (
                _peer_address(i),
                node.host_id,
                SANDBOX_DATACENTER,
                SANDBOX_RACK,
                SANDBOX_RELEASE,
                {str(t) for t in node.tokens},
            )
            for i, node in enumerate(peers)
        ),
    )


def write_raft_generation(
    client: CqlClient,
    schema: SourceSchema,
    data_id: UUID,
    timestamp: datetime,
    rows: Sequence[RawRange],
    *,
    commit: bool = True,
) -> None:
    """Data rows first, then (``commit``) the ID in ``committed_cdc_generations``."""
    topology = schema.name(Table.TOPOLOGY)
    execute(
        client,
        f"UPDATE {topology} SET new_cdc_generation_data_uuid = ? WHERE key = ?",
        (data_id, TOPOLOGY_KEY),
    )
    execute_many(
        client,
        f"INSERT INTO {schema.name(Table.CDC_GENERATIONS_V3)} (key, id, range_end, streams, "
        "ignore_msb) VALUES (?, ?, ?, ?, ?)",
        (
            (CDC_GENERATIONS_V3_KEY, data_id, r.range_end, set(r.streams), r.ignore_msb)
            for r in rows
        ),
    )
    if not commit:
        return
    generation = {(timestamp, data_id)}
    execute(
        client,
        f"UPDATE {topology} SET committed_cdc_generations = committed_cdc_generations + ?, "
        "unpublished_cdc_generations = unpublished_cdc_generations + ?, "
        "new_cdc_generation_data_uuid = null WHERE key = ?",
        (generation, generation, TOPOLOGY_KEY),
    )


def write_gossip_generation(
    client: CqlClient,
    schema: SourceSchema,
    description_id: UUID,
    timestamp: datetime,
    rows: Sequence[RawRange],
    num_ranges: int,
    *,
    commit: bool = True,
) -> None:
    """Description rows with ``num_ranges``, then (``commit``) the ID in ``cdc_local``."""
    table = schema.name(Table.CDC_GENERATION_DESCRIPTIONS_V2)
    execute(
        client,
        f"INSERT INTO {table} (id, num_ranges) VALUES (?, ?)",
        (description_id, num_ranges),
    )
    execute_many(
        client,
        f"INSERT INTO {table} (id, range_end, ignore_msb, streams) VALUES (?, ?, ?, ?)",
        ((description_id, r.range_end, r.ignore_msb, set(r.streams)) for r in rows),
    )
    if commit:
        write_cdc_local(client, schema, timestamp, description_id)


def write_cdc_local(
    client: CqlClient, schema: SourceSchema, timestamp: datetime, description_id: UUID | None
) -> None:
    """The node's persisted generation ID (``uuid`` null for a V1 ID)."""
    execute(
        client,
        f"INSERT INTO {schema.name(Table.CDC_LOCAL)} (key, streams_timestamp, uuid) "
        "VALUES (?, ?, ?)",
        (CDC_LOCAL_KEY, timestamp, description_id),
    )


def write_v1_generation(
    client: CqlClient,
    schema: SourceSchema,
    timestamp: datetime,
    rows: Sequence[RawRange],
    *,
    commit: bool = True,
) -> None:
    """The V1 description row, then (``commit``) ``cdc_local`` and the streams row."""
    description = [(r.range_end, list(r.streams), r.ignore_msb) for r in rows]
    execute(
        client,
        f"INSERT INTO {schema.name(Table.CDC_GENERATION_DESCRIPTIONS_V1)} (time, description) "
        "VALUES (?, ?)",
        (timestamp, description),
    )
    if not commit:
        return
    write_cdc_local(client, schema, timestamp, None)
    execute(
        client,
        f"INSERT INTO {schema.name(Table.CDC_STREAMS_DESCRIPTIONS_V1)} (time, streams) "
        "VALUES (?, ?)",
        (timestamp, {s for r in rows for s in r.streams}),
    )
