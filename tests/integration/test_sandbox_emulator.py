"""The sandbox emulator against a real Cassandra, read back through the pipeline's readers.

Each test builds a multi-generation sandbox in one source mode under its own keyspace
prefix, then reads it with the adapters the pipeline uses and compares with the core:
descriptions must be equal (shard order included), faults must surface as the right
errors, and every CDC log row written by the workload must sit in the stream the
generation operating at its ``cdc$time`` maps its key to. ``ring_delay`` and the leeway
are small so that generation switches happen within seconds.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cdcgen.adapters.clock_reader import CqlClockReader
from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.description_rows import tablets_description
from cdcgen.adapters.generation_sources import source_for
from cdcgen.adapters.ring_reader import GossipRingReader, RaftRingReader
from cdcgen.adapters.tablet_sources import TabletsStreamSource
from cdcgen.adapters.v1_sources import V1GenerationSource, detect_legacy_mode
from cdcgen.adapters.vnode_sources import (
    GossipGenerationSource,
    LegacyGenerationSource,
    RaftGenerationSource,
)
from cdcgen.config import PipelineConfig
from cdcgen.core.errors import CorruptGeneration, GenerationNotLoaded, IncompleteGeneration
from cdcgen.core.generation import Generation, SourceMode
from cdcgen.core.ring import GOSSIP_RING, RAFT_RING
from cdcgen.core.tablets import StreamState
from cdcgen.core.timeline import GenerationTimeline
from cdcgen.schema import (
    CDC_LOCAL_REWRITTEN_KEY,
    GENERATION_TIMESTAMPS_KEY,
    TOPOLOGY_KEY,
    SourceSchema,
    Table,
)
from cdcgen_dev.emulator import (
    FaultKind,
    GenerationFault,
    SandboxCluster,
    WorkloadSpec,
    create_cdc_table,
    merge_tablets,
    orders_table,
    rewrite_v1,
    run_workload,
    split_tablets,
)
from cdcgen_dev.emulator.clocks import SandboxClockReader
from cdcgen_dev.emulator.partition import int_key_token
from cdcgen_dev.emulator.schema_setup import ddl, drop_keyspaces
from cdcgen_dev.emulator.state import EmulatorError
from cdcgen_dev.emulator.tablets import tablet_stream_sets
from cdcgen_dev.emulator.verify import (
    check_log_routing,
    read_log_rows,
    tablet_stream_at,
    timeline_stream_at,
)
from cdcgen_dev.sandbox import sandbox_config

pytestmark = pytest.mark.integration

RING_DELAY = timedelta(milliseconds=400)
LEEWAY = timedelta(milliseconds=800)
SWITCH_DELAY = 2 * RING_DELAY + LEEWAY


@pytest.fixture
def sandbox(client: CqlClient, request: pytest.FixtureRequest) -> Iterator[SandboxCluster]:
    """A fresh emulated cluster under a prefix of its own: ``t_<test name>_``.

    Leftovers of an earlier run are dropped first; this run's keyspaces are left in place
    (dropping a dozen tables costs Cassandra seconds per test) for inspection.
    """
    name = request.node.name.removeprefix("test_")[:12].rstrip("_")  # keyspace names <= 48
    prefix = f"t_{name}_"
    schema = SourceSchema(prefix)

    def clean() -> None:
        drop_keyspaces(client, schema)
        ddl(client, f"DROP KEYSPACE IF EXISTS {prefix}ks")

    clean()
    yield SandboxCluster(client, schema, ring_delay=RING_DELAY, leeway=LEEWAY)


def config_for(cluster: SandboxCluster, mode: SourceMode, **extra: str) -> PipelineConfig:
    return sandbox_config(
        cluster.schema.keyspace_prefix, contact_points=("127.0.0.1",), source_mode=mode, extra=extra
    )


def wait_until(moment: datetime) -> None:
    delay = (moment - datetime.now(UTC)).total_seconds()
    if delay > 0:
        time.sleep(delay)


def timeline_from(source: Any) -> GenerationTimeline:
    """The core timeline built only from what a reader returns."""
    timeline = GenerationTimeline()
    for ref in source.list_generations():
        timeline.insert(ref.timestamp, source.read_description(ref))
    return timeline


# --- raft -----------------------------------------------------------------------------------


def test_raft_generations_read_back_exactly(sandbox: SandboxCluster, client: CqlClient) -> None:
    joins = [
        sandbox.join_node(SourceMode.RAFT, shards=shards, vnodes=8, seed=seed)
        for seed, shards in ((1, 2), (2, 3), (3, 4))
    ]
    source = source_for(client, config_for(sandbox, SourceMode.RAFT))
    assert isinstance(source, RaftGenerationSource)
    refs = source.list_generations()
    assert refs == [Generation(j.generation.timestamp, j.generation.id) for j in joins]
    assert refs[1].timestamp - refs[0].timestamp >= SWITCH_DELAY - timedelta(milliseconds=50)
    for ref, join in zip(refs, joins, strict=True):
        assert source.read_description(ref) == join.description
    assert len(joins[-1].description) == 24  # every ring token ends a range

    topology = list(
        client.execute(
            f"SELECT host_id, shard_count, ignore_msb, tokens, unpublished_cdc_generations "
            f"FROM {sandbox.schema.name(Table.TOPOLOGY)} WHERE key = %s",
            (TOPOLOGY_KEY,),
        )
    )
    assert sorted(r.shard_count for r in topology) == [2, 3, 4]
    assert all(len(r.tokens) == 8 and r.ignore_msb == 12 for r in topology)
    assert len(topology[0].unpublished_cdc_generations) == 3
    # Every column ScyllaDB's load_topology_state reads of a node row is there, as a
    # joined node's row holds it.
    rows = client.execute(
        "SELECT datacenter, rack, release_version, num_tokens, tokens_string, node_state, "
        f"cleanup_status, request_id, supported_features FROM {sandbox.schema.name(Table.TOPOLOGY)}"
    )
    for row in rows:
        assert row.node_state == "normal" and row.cleanup_status == "clean"
        assert row.num_tokens == 8 and row.tokens_string == "" and row.request_id.version == 1
        assert row.datacenter and row.rack and row.release_version and row.supported_features
    # ... and the pipeline's ring reader finds the nodes, their tokens and shard counts.
    ring = RaftRingReader(client, sandbox.schema).read_ring()
    assert ring is not None and ring.source == RAFT_RING and ring.shards_known
    assert {n.name: n.shard_count for n in ring.nodes} == {
        str(n.host_id): n.shard_count for n in sandbox.nodes()
    }
    assert set(ring.owners()) == {t for n in sandbox.nodes() for t in n.tokens}

    # Faults: never committed (not listed), and a ring gap (listed, unreadable).
    uncommitted = sandbox.join_node(
        SourceMode.RAFT, vnodes=4, seed=4, faults=[GenerationFault(FaultKind.UNCOMMITTED)]
    )
    gap = sandbox.join_node(
        SourceMode.RAFT, vnodes=4, seed=5, faults=[GenerationFault(FaultKind.RING_GAP, 2)]
    )
    refs = source.list_generations()
    assert uncommitted.generation.id not in {r.id for r in refs}
    assert refs[-1].id == gap.generation.id
    with pytest.raises(CorruptGeneration, match=re.escape(gap.generation.id) + ".*gap in the ring"):
        source.read_description(refs[-1])
    # Committed with not one description row: refused by name (rows are written before
    # the commit, so none at QUORUM is not a write in progress).
    empty = sandbox.join_node(
        SourceMode.RAFT, vnodes=4, seed=6, faults=[GenerationFault(FaultKind.PARTIAL_ROWS, 0)]
    )
    ref = source.list_generations()[-1]
    assert ref.id == empty.generation.id
    with pytest.raises(CorruptGeneration, match=re.escape(ref.id) + ".*has no rows"):
        source.read_arrays(ref)


# --- gossip ---------------------------------------------------------------------------------


def test_gossip_generations_and_partial_writes(sandbox: SandboxCluster, client: CqlClient) -> None:
    source = source_for(client, config_for(sandbox, SourceMode.GOSSIP))
    assert isinstance(source, GossipGenerationSource)
    sandbox.setup()
    assert source.list_generations() == []
    joins = []
    for seed in (11, 12):
        joins.append(sandbox.join_node(SourceMode.GOSSIP, shards=3, vnodes=8, seed=seed))
        assert source.list_generations()[-1].id == joins[-1].generation.id  # follows cdc_local
    refs = source.list_generations()
    assert [r.id for r in refs] == [j.generation.id for j in joins]
    # The ring as gossip shows it: system.local and system.peers tokens, no shard counts.
    ring = GossipRingReader(client, sandbox.schema).read_ring()
    assert ring is not None and ring.source == GOSSIP_RING and not ring.shards_known
    assert set(ring.owners()) == {t for n in sandbox.nodes() for t in n.tokens}
    assert len(ring.nodes) == 2
    for ref, join in zip(refs, joins, strict=True):
        assert source.read_description(ref) == join.description

    # A joining node that died half-way: cdc_local names it, only 5 of its rows exist.
    partial = sandbox.join_node(
        SourceMode.GOSSIP, vnodes=8, seed=13, faults=[GenerationFault(FaultKind.PARTIAL_ROWS, 5)]
    )
    ref = source.list_generations()[-1]
    assert ref.id == partial.generation.id
    with pytest.raises(IncompleteGeneration, match="5 of 24 description rows"):
        source.read_description(ref)
    # ...and the emulated coordinators refuse writes that fall into it.
    assert not partial.generation.loaded
    timeline = sandbox.timeline()
    with pytest.raises(GenerationNotLoaded):
        timeline.get_stream(ref.timestamp, 0, ref.timestamp, LEEWAY)

    # After a restart the source only knows what it is told plus the current ID.
    restarted = GossipGenerationSource(client, sandbox.schema, known=refs)
    assert restarted.list_generations() == [*refs, ref]

    # Not one row yet: as ScyllaDB's nodes do (the generation is incomplete, read again).
    empty = sandbox.join_node(
        SourceMode.GOSSIP, vnodes=4, seed=14, faults=[GenerationFault(FaultKind.PARTIAL_ROWS, 0)]
    )
    latest = source.list_generations()[-1]
    assert latest.id == empty.generation.id
    with pytest.raises(IncompleteGeneration, match=re.escape(latest.label) + r": 0 of \d+ desc"):
        source.read_arrays(latest)


# --- legacy V1 and the rewrite --------------------------------------------------------------


def test_v1_until_rewritten_then_v2(sandbox: SandboxCluster, client: CqlClient) -> None:
    create_cdc_table(sandbox, orders_table(f"{sandbox.schema.keyspace_prefix}ks"))
    v1_joins = [sandbox.join_node(SourceMode.V1, shards=4, vnodes=6, seed=s) for s in (21, 22)]
    assert detect_legacy_mode(client, sandbox.schema) is SourceMode.V1
    source = source_for(client, config_for(sandbox, SourceMode.V1))
    assert isinstance(source, LegacyGenerationSource)
    refs = source.list_generations()
    assert source.mode is SourceMode.V1
    assert [r.id for r in refs] == [j.generation.id for j in v1_joins]
    for ref, join in zip(refs, v1_joins, strict=True):
        assert source.read_description(ref) == join.description

    report = rewrite_v1(sandbox)
    assert report.rewritten == [j.generation.timestamp for j in v1_joins]
    assert detect_legacy_mode(client, sandbox.schema) is SourceMode.GOSSIP
    marker = client.execute(
        f"SELECT key FROM {sandbox.schema.name(Table.CDC_LOCAL)} WHERE key = %s",
        (CDC_LOCAL_REWRITTEN_KEY,),
    )
    assert list(marker)
    published = client.execute(
        f"SELECT time FROM {sandbox.schema.name(Table.CDC_GENERATION_TIMESTAMPS)} WHERE key = %s",
        (GENERATION_TIMESTAMPS_KEY,),
    )
    assert len(list(published)) == 2
    v2_rows = client.execute(
        f"SELECT range_end FROM {sandbox.schema.name(Table.CDC_STREAMS_DESCRIPTIONS_V2)} "
        "WHERE time = %s",
        (v1_joins[0].generation.timestamp,),
    )
    assert len(list(v2_rows)) == len(v1_joins[0].description)
    assert rewrite_v1(sandbox).status == "already rewritten"

    # The upgraded cluster's next generation uses the V2 format; the history stays readable.
    v2_join = sandbox.join_node(SourceMode.GOSSIP, shards=2, vnodes=6, seed=23)
    refs = source.list_generations()
    assert source.mode is SourceMode.GOSSIP
    joins = [*v1_joins, v2_join]
    assert [r.id for r in refs] == [j.generation.id for j in joins]
    for ref, join in zip(refs, joins, strict=True):
        assert source.read_description(ref) == join.description


def test_v1_corrupt_stream_id(sandbox: SandboxCluster, client: CqlClient) -> None:
    sandbox.join_node(SourceMode.V1, vnodes=4, seed=31)
    bad = sandbox.join_node(
        SourceMode.V1, vnodes=4, seed=32, faults=[GenerationFault(FaultKind.BAD_VERSION, 1)]
    )
    source = V1GenerationSource(client, sandbox.schema)
    refs = source.list_generations()
    source.read_description(refs[0])
    with pytest.raises(CorruptGeneration, match=re.escape(bad.generation.id) + ".*version 2"):
        source.read_description(refs[1])
    assert not bad.generation.loaded  # nodes could not parse it either


# --- tablets --------------------------------------------------------------------------------


def test_tablets_split_merge_and_workload(sandbox: SandboxCluster, client: CqlClient) -> None:
    sandbox.join_node(SourceMode.TABLETS, vnodes=4, seed=41)
    keyspace = f"{sandbox.schema.keyspace_prefix}ks"
    create_cdc_table(sandbox, orders_table(keyspace), tablets=2, seed=42)
    split = split_tablets(sandbox, keyspace, "orders", seed=43)
    workload = WorkloadSpec(
        keyspace, rate=300, duration=SWITCH_DELAY + timedelta(milliseconds=700), keys=200, seed=44
    )
    report = run_workload(sandbox, workload)  # runs across the split
    split_tablets(sandbox, keyspace, "orders", seed=45)
    merge_tablets(sandbox, keyspace, "orders", seed=46)

    expected = tablet_stream_sets(sandbox, keyspace, "orders")
    assert [len(s.streams) for s in expected] == [2, 4, 8, 4]
    source = source_for(
        client, config_for(sandbox, SourceMode.TABLETS, cdc_tables=f"{keyspace}.orders")
    )
    assert isinstance(source, TabletsStreamSource)
    (table_id,) = source.table_ids()
    assert TabletsStreamSource(client, sandbox.schema).table_ids() == {
        table_id: f"{keyspace}.orders"
    }
    assert source.stream_sets(table_id) == tuple(expected)
    refs = source.list_generations()
    assert [r.timestamp for r in refs] == [s.timestamp for s in expected]
    assert refs[1].timestamp == split.timestamp
    for ref, stream_set in zip(refs, expected, strict=True):
        assert source.read_description(ref) == tablets_description(stream_set)
    assert all(r.table == f"{keyspace}.orders" and r.id == str(table_id) for r in refs)
    views = source.views(refs[0])
    assert views[0].opened == expected[0].streams and views[0].closed == ()
    assert views[3].closed == expected[2].streams and views[3].opened == expected[3].streams
    assert {state for _, state, _ in views[1].rows()} == set(StreamState)

    assert report.failed == 0 and not report.rejected
    assert len(report.log_rows_by_generation) == 2, report.to_json()
    spec = orders_table(keyspace)
    rows = read_log_rows(client, spec)
    check = check_log_routing(spec, rows, tablet_stream_at(source.stream_sets(table_id)))
    assert check.ok, (check.misplaced[:3], check.bad_batches[:3])
    assert check.rows == report.log_rows
    assert dict(check.rows_by_generation) == dict(report.log_rows_by_generation)


# --- the workload across a vnode generation switch ------------------------------------------


def test_workload_rows_follow_the_generations(sandbox: SandboxCluster, client: CqlClient) -> None:
    first = sandbox.join_node(SourceMode.RAFT, shards=2, vnodes=8, seed=51)
    keyspace = f"{sandbox.schema.keyspace_prefix}ks"
    spec = orders_table(keyspace, cdc_ttl=600)
    create_cdc_table(sandbox, spec)
    second = sandbox.join_node(SourceMode.RAFT, shards=3, vnodes=8, seed=52)
    # node1 lags: it keeps writing into the first generation after the switch (its clock
    # has not reached it), exactly why consumers wait for every node's clock.
    sandbox.set_clock_skew("node1", -LEEWAY / 2)
    # Until its clock reaches the cluster's first generation, node1 has no stream to write
    # to (ScyllaDB refuses such writes too); start once it has.
    wait_until(first.generation.timestamp + LEEWAY / 2)
    # It writes until well past the switch on every node's clock (node1's lags), however
    # long creating the table and joining took: a fixed duration from its own start left
    # a loaded machine's workload ending before the second generation's first write.
    until = second.generation.timestamp + LEEWAY + timedelta(seconds=2)
    report = run_workload(
        sandbox,
        WorkloadSpec(keyspace, rate=400, duration=until - datetime.now(UTC), keys=500, seed=53),
    )
    assert report.failed == 0 and not report.rejected, report.to_json()
    assert sorted(report.log_rows_by_generation) == [g.timestamp for g in sandbox.generations()], (
        report.to_json()
    )
    assert report.last_write > second.generation.timestamp

    source = RaftGenerationSource(client, sandbox.schema)
    rows = read_log_rows(client, spec)
    check = check_log_routing(spec, rows, timeline_stream_at(timeline_from(source)))
    assert check.ok, (check.misplaced[:3], check.bad_batches[:3])
    assert check.rows == report.log_rows
    assert check.writes == report.writes
    assert dict(check.rows_by_generation) == dict(report.log_rows_by_generation)
    assert {op for op in check.operations} <= set(range(1, 9))
    ttls = list(
        client.execute(f'SELECT TTL("cdc$operation") FROM {spec.qualified_log_table} LIMIT 5')
    )
    assert all(0 < r[0] <= 600 for r in ttls if r[0] is not None)

    # The emulator's tokens are Cassandra's: token(pk) agrees for every written key.
    for row in client.execute(f"SELECT DISTINCT pk, token(pk) FROM {spec.qualified_table}"):
        assert int_key_token(row[0]) == row[1]

    # Writes stamped too far ahead by the client are refused, as ScyllaDB refuses them.
    future = run_workload(
        sandbox,
        WorkloadSpec(
            keyspace,
            rate=200,
            duration=timedelta(milliseconds=300),
            timestamps="client",
            client_skew=LEEWAY * 3,
            seed=54,
        ),
    )
    assert future.writes == 0 and future.rejected["WriteFromTheFuture"] > 0

    # A misrouting fault is caught by the check, row for row.
    bad = WorkloadSpec(
        keyspace, table="faulty", rate=200, duration=timedelta(milliseconds=500), seed=55,
        misroute_fraction=0.3,
    )  # fmt: skip
    faulty = orders_table(keyspace, "faulty")
    create_cdc_table(sandbox, faulty)
    misrouted = run_workload(sandbox, bad)
    check = check_log_routing(
        faulty, read_log_rows(client, faulty), timeline_stream_at(timeline_from(source))
    )
    assert misrouted.misrouted > 0
    assert len(check.misplaced) == misrouted.misrouted


# --- nodes leaving --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [SourceMode.RAFT, SourceMode.GOSSIP])
def test_a_node_leaves_without_a_new_generation(
    sandbox: SandboxCluster, client: CqlClient, mode: SourceMode
) -> None:
    """A decommission takes the node out of the ring the pipeline reads, makes no
    generation, and writes go on into the operating one, routed as before."""
    for seed in (61, 62, 63):
        sandbox.join_node(mode, shards=2, vnodes=4, seed=seed)
    keyspace = f"{sandbox.schema.keyspace_prefix}ks"
    spec = orders_table(keyspace, cdc_ttl=600)
    create_cdc_table(sandbox, spec)
    generations = sandbox.generations()
    reader = (RaftRingReader if mode is SourceMode.RAFT else GossipRingReader)(
        client, sandbox.schema
    )
    before = reader.read_ring()
    assert before is not None and len(before.nodes) == 3

    left = sandbox.leave_node("node2", mode)
    after = reader.read_ring()
    assert after is not None and len(after.nodes) == 2
    assert set(after.owners()) == set(before.owners()) - set(left.tokens)
    assert sandbox.generations() == generations
    assert [n.name for n in sandbox.nodes()] == ["node1", "node3"]
    with pytest.raises(EmulatorError, match="no sandbox node named 'node2'"):
        sandbox.leave_node("node2", mode)

    wait_until(generations[-1].timestamp + LEEWAY)
    report = run_workload(
        sandbox, WorkloadSpec(keyspace, rate=200, duration=timedelta(seconds=1), seed=64)
    )
    assert report.writes and report.failed == 0 and not report.rejected, report.to_json()
    assert list(report.log_rows_by_generation) == [generations[-1].timestamp]
    source = source_for(client, config_for(sandbox, mode))
    check = check_log_routing(
        spec, read_log_rows(client, spec), timeline_stream_at(timeline_from(source))
    )
    assert check.ok and check.rows == report.log_rows, (check.misplaced[:3], check.bad_batches[:3])

    # The next node to join is named past the nodes there are (node3 is), and a join
    # makes a new generation again.
    joined = sandbox.join_node(mode, shards=2, vnodes=4, seed=65)
    assert joined.node.name == "node4" and joined.generation is not None
    sandbox.leave_node("node1", mode)
    sandbox.leave_node("node3", mode)
    with pytest.raises(EmulatorError, match="node4 is the cluster's last node"):
        sandbox.leave_node("node4", mode)
    ring = reader.read_ring()
    assert ring is not None and [n.tokens for n in ring.nodes] == [
        tuple(sorted(joined.node.tokens))
    ]


# --- clocks ---------------------------------------------------------------------------------


def test_clock_skew_read_back(sandbox: SandboxCluster, client: CqlClient) -> None:
    assert SandboxClockReader(client, sandbox.schema).read_clocks()[0].error
    for seed in (61, 62, 63):
        sandbox.join_node(SourceMode.RAFT, vnodes=2, seed=seed)
    sandbox.set_clock_skew("node1", timedelta(seconds=2))
    sandbox.set_clock_skew("node2", timedelta(seconds=-1.5))
    sandbox.set_node_up("node3", False)
    before = datetime.now(UTC)
    clocks = {c.node: c for c in SandboxClockReader(client, sandbox.schema).read_clocks()}
    after = datetime.now(UTC)
    slack = timedelta(milliseconds=50)  # now() has millisecond precision
    assert before + timedelta(seconds=2) - slack <= clocks["node1"].clock
    assert clocks["node1"].clock <= after + timedelta(seconds=2)
    assert before - timedelta(seconds=1.5) - slack <= clocks["node2"].clock
    assert clocks["node2"].clock <= after - timedelta(seconds=1.5)
    assert clocks["node3"].clock is None and "down" in clocks["node3"].error

    (host,) = CqlClockReader(client).read_clocks()
    assert host.error is None and abs(host.clock - datetime.now(UTC)) < timedelta(seconds=2)


# --- three nodes: a stopped node --------------------------------------------------------------


@pytest.mark.cluster
def test_stopped_node_has_no_clock(cassandra_cluster3: Any) -> None:
    addresses = sorted(cassandra_cluster3.contact_points)
    client = connect(addresses, cassandra_cluster3.port)
    try:
        schema = SourceSchema("t_three_")
        drop_keyspaces(client, schema)
        cluster = SandboxCluster(client, schema, ring_delay=RING_DELAY, leeway=LEEWAY)
        joins = [cluster.join_node(SourceMode.RAFT, vnodes=4, seed=s) for s in (71, 72, 73)]
        # Each simulated node stands on its own Cassandra node; metadata is on all three.
        assert [n.address for n in cluster.nodes()] == addresses
        replication = client.cluster.metadata.keyspaces["t_three_system"].replication_strategy
        assert replication.replication_factor == 3

        cassandra_cluster3.sandbox.stop_node(3, kill=True)  # crash the node at addresses[2]
        try:
            from cassandra import OperationTimedOut
            from cassandra.cluster import NoHostAvailable

            deadline = time.monotonic() + 60
            while True:
                try:
                    clocks = {c.node: c for c in SandboxClockReader(client, schema).read_clocks()}
                except (OperationTimedOut, NoHostAvailable):
                    # Right after the crash a request may still be in flight to the dead node
                    # or wait on it as a replica; callers (the trigger) retry such errors.
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
                    continue
                if clocks["node3"].error or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert clocks["node3"].clock is None and addresses[2] in clocks["node3"].error
            assert clocks["node1"].clock is not None and clocks["node2"].clock is not None
            by_host = {c.node: c for c in CqlClockReader(client).read_clocks()}
            assert by_host[addresses[2]].error and by_host[addresses[0]].error is None
            # Metadata stays readable at QUORUM with one replica of three down.
            source = RaftGenerationSource(client, schema)
            refs = source.list_generations()
            assert source.read_description(refs[-1]) == joins[-1].description
        finally:
            cassandra_cluster3.sandbox.start_node(3)
    finally:
        client.close()
