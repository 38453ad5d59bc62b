"""Read the live token ring where ScyllaDB keeps it (:class:`~cdcgen.ports.RingReader`).

* raft topology: the node rows of ``system.topology`` (``key = 'topology'``), exactly the
  columns ``system_keyspace::load_topology_state`` reads for the ring: ``tokens``
  (``set<text>`` of decimal tokens), ``shard_count``, ``ignore_msb``, ``node_state``;
* gossip (and a V1 cluster): ``tokens`` of ``system.local`` and of every ``system.peers``
  row. No table holds a gossip node's shard count, so those stay unknown and validation
  checks that each node's ranges agree with one another instead.

Nodes are named by host ID, as ScyllaDB names them. A tablets cluster's stream sets
follow tablets, not vnodes: it has no ring reader.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cdcgen.core.generation import SourceMode
from cdcgen.core.ring import GOSSIP_RING, RAFT_RING, Ring, ring_from_rows
from cdcgen.schema import TOPOLOGY_KEY, SourceSchema, Table

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig
    from cdcgen.ports import RingReader


class RaftRingReader:
    """The ring of a raft-topology cluster: ``system.topology``'s node rows."""

    def __init__(self, client: CqlClient, schema: SourceSchema) -> None:
        self.client = client
        self.schema = schema

    def read_ring(self) -> Ring | None:
        rows = self.client.execute(
            f"SELECT host_id, tokens, shard_count, ignore_msb, node_state FROM "
            f"{self.schema.name(Table.TOPOLOGY)} WHERE key = %s",
            (TOPOLOGY_KEY,),
        )
        ring = ring_from_rows(
            (
                (str(r.host_id), r.tokens, r.shard_count, r.ignore_msb, r.node_state or "")
                for r in rows
                if r.host_id is not None  # a partition with only the static row
            ),
            RAFT_RING,
            datetime.now(UTC),
        )
        return ring if ring.nodes else None


class GossipRingReader:
    """The ring of a gossip cluster: ``system.local`` plus ``system.peers`` tokens."""

    def __init__(self, client: CqlClient, schema: SourceSchema) -> None:
        self.client = client
        self.schema = schema

    def read_ring(self) -> Ring | None:
        rows = self._rows()
        ring = ring_from_rows(
            ((str(r.host_id), r.tokens, None, None, "normal") for r in rows if r.host_id),
            GOSSIP_RING,
            datetime.now(UTC),
        )
        return ring if ring.nodes else None

    def _rows(self) -> list[Any]:
        """Both tables from one node: ``local`` is whichever node answers, so ``peers``
        must come from the same one or a node is counted twice and another missed."""
        from cassandra import DriverException, RequestExecutionException
        from cassandra.cluster import NoHostAvailable

        hosts = sorted(self.client.cluster.metadata.all_hosts(), key=lambda h: not h.is_up)
        failures: list[str] = []
        for host in hosts:
            try:
                rows: list[Any] = []
                for table in (Table.LOCAL, Table.PEERS):
                    query = f"SELECT host_id, tokens FROM {self.schema.name(table)}"
                    rows += list(self.client.execute(query, host=host))
                return rows
            except (DriverException, RequestExecutionException, NoHostAvailable) as exc:
                failures.append(f"{host.address}: {exc}")
        raise ConnectionError(
            "no node answered for its local and peers tokens: " + "; ".join(failures)
        )


def ring_reader_for(client: CqlClient, config: PipelineConfig) -> RingReader | None:
    """The ring reader of ``config.source_mode`` (none for tablets)."""
    mode = SourceMode(config.source_mode)
    if mode is SourceMode.RAFT:
        return RaftRingReader(client, config.source_schema)
    if mode in (SourceMode.GOSSIP, SourceMode.V1):
        return GossipRingReader(client, config.source_schema)
    return None
