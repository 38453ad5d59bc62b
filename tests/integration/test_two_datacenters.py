"""A local datacenter on the three-node sandbox, which is two datacenters: nodes 1 and 2
in ``dc1``, node 3 in ``dc2`` (docs/connecting.md, "Clusters of several datacenters").

With ``local_datacenter=dc1`` the pipeline's own state is read and written at
LOCAL_QUORUM, coordinated in dc1, while the published description tables stay at
QUORUM and the clock checks still ask the dc2 node. Each is observed on the servers,
not taken from the client's settings:

* a keyspace replicated only in dc2: the state store is refused by a dc1 coordinator,
  the server naming LOCAL_QUORUM (a dc2 coordinator, or QUORUM, would have succeeded),
  while a generation is published there and read back at QUORUM;
* every node's own count of the requests it coordinated for the state tables: dc1's
  nodes, never dc2's;
* node 3 stopped (the whole of dc2): the state is written and read back; a keyspace
  with one replica in each datacenter shows it is the local level that goes on, since
  QUORUM there needs the node that is away.

Without a local datacenter every node is alike: the CDC log's read sessions are
connected to both datacenters' nodes. The node stop comes last and restarts the node
before it returns, as the other ``cluster`` tests do.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cassandra import ConsistencyLevel, Unavailable

from cdcgen.adapters.checkpoints import CHECKPOINTS_TABLE, PROGRESS_TABLE, CqlCheckpointStore
from cdcgen.adapters.clock_reader import CqlClockReader
from cdcgen.adapters.cluster_access import ClusterAccess
from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.publisher import CqlDescriptionPublisher
from cdcgen.adapters.read_sessions import SessionKey, open_read_session
from cdcgen.core.cdc_log import LogPartitioner, TableRef
from cdcgen.core.topology import Node, TopologyDescription, make_generation
from cdcgen.core.watermark import BucketCheckpoint
from cdcgen.schema import create_keyspace_cql

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

PREFIX = "t_two_dcs_"
LOCAL = "dc1"
PLACES = {"127.0.0.1": "dc1", "127.0.0.2": "dc1", "127.0.0.3": "dc2"}
#: The state keyspace of a pipeline beside dc1: two replicas there, one in dc2.
STATE_REPLICATION = {"class": "NetworkTopologyStrategy", "dc1": 2, "dc2": 1}
#: One replica in each datacenter: QUORUM (two of two) needs dc2, LOCAL_QUORUM does not.
ONE_EACH = {"class": "NetworkTopologyStrategy", "dc1": 1, "dc2": 1}
#: Replicas only in dc2: no dc1 coordinator can meet LOCAL_QUORUM, any can meet QUORUM.
DC2_ONLY = {"class": "NetworkTopologyStrategy", "dc2": 1}
TABLE = TableRef("shop", "orders")
GENERATION = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
DDL_TIMEOUT = 120.0


@dataclass
class TwoDatacenters:
    sandbox: Any
    nodes: list[str]
    port: int
    #: The pipeline's client beside dc1 (``local_datacenter=dc1``).
    local: CqlClient
    #: A client without a local datacenter: every node alike, QUORUM throughout.
    anywhere: CqlClient

    def keyspace(self, name: str, replication: dict[str, Any]) -> str:
        keyspace = f"{PREFIX}{name}"
        session = self.anywhere.session
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=DDL_TIMEOUT)
        session.execute(create_keyspace_cql(keyspace, replication), timeout=DDL_TIMEOUT)
        self.agree()
        # The state store skips its DDL when the driver's metadata has its tables: those
        # of the keyspace a previous session dropped would be seen until the next event.
        for client in (self.local, self.anywhere):
            client.cluster.refresh_schema_metadata()
        return keyspace

    def store(self, client: CqlClient, keyspace: str) -> CqlCheckpointStore:
        """The state store in ``keyspace``, its tables known to every node."""
        store = CqlCheckpointStore(client, keyspace)
        store.ensure_schema()
        self.agree()
        return store

    def agree(self) -> None:
        """Until every node has the schema: the driver waits for that after a schema
        change only so long, and a node without a new table refuses its requests."""
        control = self.anywhere.cluster.control_connection
        assert control.wait_for_schema_agreement(wait_time=DDL_TIMEOUT), "no schema agreement"


@pytest.fixture(scope="module")
def dcs(cassandra_cluster3: Any) -> Iterator[TwoDatacenters]:
    nodes = sorted(cassandra_cluster3.contact_points)
    port = cassandra_cluster3.port
    local = connect(nodes, port, access=ClusterAccess(local_datacenter=LOCAL))
    anywhere = connect(nodes, port)
    try:
        connected(local.session)  # what it reaches is the clock test's to check
        assert connected(anywhere.session) == set(PLACES)
        yield TwoDatacenters(cassandra_cluster3.sandbox, nodes, port, local, anywhere)
    finally:
        cassandra_cluster3.sandbox.up()  # whatever a failed test left down
        for client in (local, anywhere):
            client.close()


def connected(session: Any, timeout: float = 30.0) -> set[str]:
    """The nodes ``session`` holds connections to, once it holds one to every node the
    cluster has, or after ``timeout`` (a new session connects to the first node it reaches
    and to the others meanwhile: asked at once, a node may not be connected yet)."""
    everyone = {str(h.address) for h in session.cluster.metadata.all_hosts()}
    deadline = time.monotonic() + timeout
    while True:
        pools = {str(host.address) for host in session.get_pool_state()}
        if pools >= everyone or time.monotonic() > deadline:
            return pools
        time.sleep(0.2)


def checkpoints(count: int, at: datetime) -> list[BucketCheckpoint]:
    return [
        BucketCheckpoint(GENERATION, bucket, at, window_start=GENERATION, run_id="two-dcs")
        for bucket in range(count)
    ]


def write_and_read_state(store: CqlCheckpointStore, at: datetime, buckets: int = 8) -> None:
    """What a changes run does to its state: its start, its checkpoints, its watermark,
    then what the next run reads; the reads must hold what was written."""
    store.record_start(TABLE, GENERATION)
    assert store.save(TABLE, checkpoints(buckets, at)) == buckets
    store.save_watermark(TABLE, at, run_id="two-dcs")
    state = store.table_state(TABLE)
    assert state.watermark == at and state.started_at == GENERATION
    assert state.checkpoints == {(GENERATION, b): at for b in range(buckets)}


def refusal(error: BaseException) -> Unavailable:
    """The server's Unavailable answer in ``error`` (the driver wraps the last host's
    answer in NoHostAvailable when it tried the next host too)."""
    answers = [error, *(getattr(error, "errors", None) or {}).values()]
    found = [a for a in answers if isinstance(a, Unavailable)]
    assert found, f"not refused for its replicas: {error!r}"
    return found[0]


def small_generation() -> TopologyDescription:
    rng = random.Random(3)
    ring = [
        Node(f"n{i}", 2, 12, tuple(rng.randrange(-(2**63), 2**63) for _ in range(4)))
        for i in range(2)
    ]
    return make_generation(ring, random.Random(4))


def coordinated(client: CqlClient, keyspace: str) -> dict[str, int]:
    """Per node, the reads and writes of the state tables it coordinated, as the node
    itself counts them (its ``system_views`` coordinator latency tables)."""
    counts = dict.fromkeys(PLACES, 0)
    for host in client.cluster.metadata.all_hosts():
        for view in (
            "coordinator_read_latency",
            "coordinator_scan_latency",
            "coordinator_write_latency",
        ):
            rows = client.session.execute(
                f"SELECT table_name, count FROM system_views.{view} WHERE keyspace_name = %s",
                (keyspace,),
                host=host,
            )
            tables = {CHECKPOINTS_TABLE, PROGRESS_TABLE}
            counts[str(host.address)] += sum(r.count for r in rows if r.table_name in tables)
    return counts


# --- the sandbox ----------------------------------------------------------------------------


def test_the_three_node_sandbox_is_two_datacenters(dcs: TwoDatacenters) -> None:
    """Each node says where it stands; a SimpleStrategy keyspace, which knows no
    datacenters, still keeps a replica on each of the three nodes."""
    places = {}
    for host in dcs.anywhere.cluster.metadata.all_hosts():
        row = dcs.anywhere.session.execute("SELECT data_center FROM system.local", host=host).one()
        places[str(host.address)] = row.data_center
    assert places == PLACES
    keyspace = dcs.keyspace("simple", {"class": "SimpleStrategy", "replication_factor": 3})
    metadata = dcs.anywhere.cluster.metadata
    replicas = metadata.get_replicas(keyspace, b"\x00\x00\x00\x01")
    assert sorted(str(h.address) for h in replicas) == dcs.nodes
    dcs.anywhere.session.execute(f"DROP KEYSPACE {keyspace}", timeout=DDL_TIMEOUT)


# --- levels and routing, every node up ------------------------------------------------------


def test_state_is_local_quorum_in_dc1_and_descriptions_stay_at_quorum(
    dcs: TwoDatacenters,
) -> None:
    """In a keyspace only dc2 replicates, the state store's writes and reads are refused
    by dc1's coordinators at LOCAL_QUORUM (one replica needed in dc1, none there), the
    server naming the level; a generation is published and read back at QUORUM (the dc2
    replica answers through a dc1 coordinator), and the same state written at QUORUM by
    a client without a local datacenter succeeds: the level refused it, not the keyspace."""
    keyspace = dcs.keyspace("dc2_only", DC2_ONLY)
    store = dcs.store(dcs.local, keyspace)
    at = GENERATION + timedelta(minutes=5)
    with pytest.raises(Exception) as refused_write:
        store.save_watermark(TABLE, at, run_id="two-dcs")
    with pytest.raises(Exception) as refused_read:
        store.progress(TABLE)
    for refused in (refused_write.value, refused_read.value):
        answer = refusal(refused)
        assert answer.consistency == ConsistencyLevel.LOCAL_QUORUM, answer
        assert (answer.required_replicas, answer.alive_replicas) == (1, 0), answer

    publisher = CqlDescriptionPublisher(dcs.local, keyspace=keyspace, retry_backoff=0.2)
    publisher.ensure_tables()
    dcs.agree()
    assert publisher.publish(GENERATION, small_generation())
    assert publisher.is_published(GENERATION)

    write_and_read_state(dcs.store(dcs.anywhere, keyspace), at)


def test_state_requests_are_coordinated_in_dc1_and_clocks_read_in_both(
    dcs: TwoDatacenters,
) -> None:
    """Over dc1: every state read and write goes to a dc1 node, so dc2's node coordinates
    none of them (each node counts its own). The reads of every table's progress (the
    report's overview) have no partition key to route by, so only the datacenter decides
    where they go. The clock checks still ask the dc2 node, over the connection the
    policy keeps to it."""
    keyspace = dcs.keyspace("state", STATE_REPLICATION)
    store = dcs.store(dcs.local, keyspace)
    before = coordinated(dcs.anywhere, keyspace)
    for minute in range(1, 4):
        write_and_read_state(store, GENERATION + timedelta(minutes=minute), buckets=16)
    overviews = 6
    for _ in range(overviews):
        assert [p.table for p in store.all_progress()] == [TABLE]
    after = coordinated(dcs.anywhere, keyspace)
    counted = {node: after[node] - before[node] for node in PLACES}
    # Per run: a start, 16 checkpoints, a watermark, then two reads (progress, checkpoints).
    assert sum(counted.values()) >= 3 * 20 + overviews, counted
    assert counted["127.0.0.3"] == 0, counted

    clocks = {c.node: c for c in CqlClockReader(dcs.local).read_clocks()}
    assert set(clocks) == set(PLACES)
    for clock in clocks.values():
        assert clock.error is None and clock.clock is not None, clock
        assert abs(clock.clock - datetime.now(UTC)) < timedelta(seconds=30), clock


def test_log_reads_without_a_local_datacenter_reach_every_node(dcs: TwoDatacenters) -> None:
    """Without a local datacenter every node is alike, the CDC log's read sessions too:
    each is connected, so a read routed to a replica in dc2 goes there."""
    key = SessionKey(tuple(dcs.nodes), dcs.port, LogPartitioner.MURMUR3, request_timeout=30.0)
    cluster, session = open_read_session(key)
    try:
        assert connected(session) == set(PLACES)
        for host in cluster.metadata.all_hosts():
            (row,) = session.execute("SELECT data_center FROM system.local", host=host)
            assert row[0] == PLACES[str(host.address)]
    finally:
        cluster.shutdown()


# --- dc2 away -----------------------------------------------------------------------------


def wait_until_down(client: CqlClient, address: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while address not in client.hosts_down():
        assert time.monotonic() < deadline, f"the driver never saw {address} down"
        time.sleep(0.5)


def test_the_state_goes_on_at_local_quorum_while_dc2_is_down(dcs: TwoDatacenters) -> None:
    """Node 3, all of dc2, stopped: the state is written and read back at LOCAL_QUORUM in
    both layouts; with one replica in each datacenter, QUORUM (a client without a local
    datacenter) is refused, since it needs the node that is away; the clock checks name
    that node, whose clock no one can read."""
    state = dcs.keyspace("state_away", STATE_REPLICATION)
    one_each = dcs.keyspace("one_each", ONE_EACH)
    stores = [dcs.store(dcs.local, k) for k in (state, one_each)]
    dcs.sandbox.stop_node(3)
    try:
        wait_until_down(dcs.local, "127.0.0.3")
        wait_until_down(dcs.anywhere, "127.0.0.3")
        for minute, store in enumerate(stores, start=1):
            write_and_read_state(store, GENERATION + timedelta(minutes=minute))
        with pytest.raises(Exception) as refused:
            CqlCheckpointStore(dcs.anywhere, one_each).save_watermark(TABLE, GENERATION)
        answer = refusal(refused.value)
        assert answer.consistency == ConsistencyLevel.QUORUM, answer
        clocks = {c.node: c for c in CqlClockReader(dcs.local).read_clocks()}
        assert clocks["127.0.0.3"].clock is None and clocks["127.0.0.3"].error
        assert clocks["127.0.0.1"].clock is not None and clocks["127.0.0.2"].clock is not None
    finally:
        dcs.sandbox.start_node(3)
