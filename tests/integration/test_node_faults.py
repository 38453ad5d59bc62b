"""Nodes down under detection, change extraction and publication: three nodes, RF 3.

An emulated raft cluster writes two generations and a workload that crosses the switch
into the three-node sandbox (every keyspace RF 3). Then, through the code the DAG tasks
run (:func:`cdcgen.pipeline.detect.detect` over the generation ports, the changes run
over the Spark job's adapters, the description publisher):

* one node killed (SIGKILL, no goodbye to the driver): detection finds the same
  generations, the extraction lands every change exactly once and a 16,384-stream
  generation is published, all at QUORUM;
* a second node stopped: each fails within a bounded time, naming the consistency level
  and the nodes down, with nothing checkpointed past what the lake holds;
* every node back: the next runs complete, exactly once.

A publisher process killed mid-way is in ``test_publisher_faults.py``. One scenario
shares the node stops and restarts: they are most of its time.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pyarrow.parquet as pq
import pytest
from cassandra.util import datetime_from_uuid1
from lake_files import committed_files
from sample_generations import WHEN, generation

from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.errors import ReplicasUnavailable
from cdcgen.adapters.generation_sources import connected_generation_ports
from cdcgen.adapters.publisher import CqlDescriptionPublisher
from cdcgen.changes.changes_run import ChangesRequest, extract_changes
from cdcgen.changes.job import table_adapters
from cdcgen.changes.layout import table_root
from cdcgen.changes.result import ExtractionRun
from cdcgen.changes.settings import ChangesSettings
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.generation import SourceMode
from cdcgen.core.windows import Interval, Mode
from cdcgen.pipeline.detect import detect
from cdcgen.schema import SourceSchema, create_keyspace_cql
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import (
    SandboxCluster,
    WorkloadSpec,
    create_cdc_table,
    orders_table,
    run_workload,
)
from cdcgen_dev.emulator.schema_setup import drop_keyspaces
from cdcgen_dev.sandbox import sandbox_config

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

PREFIX = "t_nodes_"
KEYSPACE = f"{PREFIX}ks"
TABLE = TableRef(KEYSPACE, "orders")
RING_DELAY = timedelta(milliseconds=500)
LEEWAY = timedelta(milliseconds=800)
CONFIDENCE = timedelta(milliseconds=500)
SETTINGS = ChangesSettings(
    buckets=4,
    streams_per_task=8,
    page_size=200,
    batch_rows=500,
    max_attempts=4,
    backoff_base=timedelta(milliseconds=100),
    backoff_max=timedelta(seconds=2),
)
#: What "bounded" means here: the retries' worst case plus the driver's timeouts.
BOUND_SECONDS = 90

Key = tuple[str, str, int]  # (stream hex, cdc$time, batch_seq_no)


@dataclass
class World:
    client: CqlClient
    sandbox: Any
    nodes: list[str]
    start: datetime
    end: datetime
    switch: datetime  # the second generation's start

    def config(self, lake: Path) -> PipelineConfig:
        """A run's configuration; its published rows and checkpoints are its own (the
        target keyspace is named after the lake's folder)."""
        return sandbox_config(
            PREFIX,
            contact_points=tuple(self.nodes),
            source_mode=SourceMode.RAFT,
            target_keyspace=f"{PREFIX}{lake.name}",
            lake_path=lake,
            report_dir=lake / "reports",
            generation_leeway=LEEWAY,
            confidence_window=CONFIDENCE,
        )


@pytest.fixture(scope="module")
def world(cassandra_cluster3: Any) -> Iterator[World]:
    nodes = sorted(cassandra_cluster3.contact_points)
    client = connect(nodes, cassandra_cluster3.port)
    schema = SourceSchema(PREFIX)
    drop_keyspaces(client, schema)
    for name in ("ks", "healthy", "lake", "down", "second", "published"):
        client.session.execute(f"DROP KEYSPACE IF EXISTS {PREFIX}{name}", timeout=120)
    cluster = SandboxCluster(client, schema, ring_delay=RING_DELAY, leeway=LEEWAY)
    first = cluster.join_node(SourceMode.RAFT, shards=3, vnodes=4, seed=21)
    assert first.generation is not None
    create_cdc_table(cluster, orders_table(KEYSPACE))
    start = datetime.now(UTC)
    # Two phases, so that a loaded machine cannot leave either generation without
    # changes: the first writes before the second node even joins (every change is in the
    # first generation), the second writes until well past the switch on every clock.
    wait_until(first.generation.timestamp + LEEWAY)
    workload(cluster, timedelta(seconds=1.5), seed=9)
    second = cluster.join_node(SourceMode.RAFT, shards=2, vnodes=4, seed=22)  # ~2 s from now
    assert second.generation is not None
    workload(cluster, second.generation.timestamp + LEEWAY * 2 - datetime.now(UTC), seed=10)
    end = datetime.now(UTC) + timedelta(milliseconds=5)
    time.sleep((LEEWAY + CONFIDENCE).total_seconds() + 0.2)  # let the windows close
    try:
        yield World(
            client, cassandra_cluster3.sandbox, nodes, start, end, second.generation.timestamp
        )
    finally:
        cassandra_cluster3.sandbox.up()  # whatever a failed test left down
        client.close()


def wait_until(moment: datetime) -> None:
    time.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()))


def workload(cluster: SandboxCluster, duration: timedelta, seed: int) -> None:
    report = run_workload(
        cluster, WorkloadSpec(keyspace=KEYSPACE, rate=200, duration=duration, keys=120, seed=seed)
    )
    assert report.failed == 0 and not report.rejected, report.to_json()


@pytest.fixture(scope="module")
def spark() -> Any:
    return job_session(JobKind.CHANGES_EXTRACT, "cdcgen-node-fault-tests")


def wait_until_down(client: CqlClient, addresses: set[str], timeout: float = 90) -> None:
    """Until the driver has seen ``addresses`` go down (its own failure detection)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if addresses <= set(client.hosts_down()):
            return
        time.sleep(0.5)
    raise AssertionError(f"the driver never saw {sorted(addresses)} down")


def wait_until_healthy(client: CqlClient, timeout: float = 120) -> None:
    """Until the driver sees every node up and they agree on the schema.

    A node SIGKILLed within ``commitlog_sync_period`` (10 s) of a schema change loses it
    and answers "keyspace does not exist" until it has pulled the schema again: the
    next run starts once the cluster is whole, as a scheduled one would.
    """
    deadline = time.monotonic() + timeout
    while client.hosts_down() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not client.hosts_down(), f"still down: {client.hosts_down()}"
    agreed = client.cluster.control_connection.wait_for_schema_agreement(
        wait_time=max(1.0, deadline - time.monotonic())
    )
    assert agreed, "the nodes never agreed on the schema"


def detected(config: PipelineConfig) -> list[str]:
    """The generations a scheduled run would take, through the detect task's code."""
    with connected_generation_ports(config) as ports:
        return [s.generation.label for s in detect(ports.source, ports.publisher)]


def extract(spark: Any, world: World, config: PipelineConfig) -> ExtractionRun:
    """One incremental changes run of the whole workload, as the Spark job builds it."""
    client = connect(world.nodes)
    try:
        built = table_adapters(client, spark, config, SETTINGS, TABLE)
        request = ChangesRequest(TABLE, Interval(world.start, world.end), Mode.INCREMENTAL)
        return extract_changes(
            request, built.ports(validate=False), config, SETTINGS, cdc_ttl=built.log_table.ttl
        )
    finally:
        client.close()


def source_keys(world: World) -> set[Key]:
    rows = world.client.session.execute(
        f'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no" '
        f"FROM {KEYSPACE}.orders_scylla_cdc_log",
        timeout=60,
    )
    return {(bytes(r[0]).hex(), str(r[1]), r[2]) for r in rows}


def lake_keys(config: PipelineConfig) -> Counter[Key]:
    keys: Counter[Key] = Counter()
    for path in committed_files(table_root(config.lake_path, TABLE)):
        columns = ["cdc$stream_id", "cdc$time", "cdc$batch_seq_no"]
        for row in pq.read_table(path, columns=columns).to_pylist():
            keys[(row["cdc$stream_id"].hex(), row["cdc$time"], row["cdc$batch_seq_no"])] += 1
    return keys


def test_detection_extraction_and_publication_ride_out_one_node_down_and_name_two(
    world: World, spark: Any, tmp_path: Path
) -> None:
    truth = source_keys(world)
    # The workload is paced by time, so a loaded machine writes fewer changes; what the
    # scenario needs is changes on both sides of the generation switch.
    times = [datetime_from_uuid1(UUID(key[1])).replace(tzinfo=UTC) for key in truth]
    assert sum(t < world.switch for t in times) >= 50, "too few changes before the switch"
    assert sum(t >= world.switch for t in times) >= 50, "too few changes after the switch"
    healthy_lake = tmp_path / "healthy"
    expected_generations = detected(world.config(healthy_lake))
    assert len(expected_generations) == 2
    published = f"{PREFIX}published"
    replication = {"class": "SimpleStrategy", "replication_factor": 3}
    world.client.session.execute(create_keyspace_cql(published, replication), timeout=60)
    publisher = CqlDescriptionPublisher(world.client, keyspace=published, retry_backoff=0.2)
    publisher.ensure_tables()

    # One node crashes: QUORUM (two of three) still answers every read.
    world.sandbox.stop_node(3, kill=True)
    wait_until_down(world.client, {world.nodes[2]})
    lake = tmp_path / "lake"
    config = world.config(lake)
    assert detected(config) == expected_generations
    first = extract(spark, world, config)
    assert first.plan.pending == ()
    assert lake_keys(config) == Counter(dict.fromkeys(truth, 1))
    assert publisher.publish(WHEN, generation())

    # Two nodes down: each fails within a bounded time, naming the level and the nodes.
    # Node 2 is stopped in order: a node killed within commitlog_sync_period (10 s,
    # periodic, as on ScyllaDB) of a write may lose it, and the writes above reached
    # only nodes 1 and 2; losing one there is the database's durability contract.
    world.sandbox.stop_node(2)
    wait_until_down(world.client, {world.nodes[1], world.nodes[2]})
    began = time.monotonic()
    with pytest.raises(ReplicasUnavailable) as refused:
        detected(world.config(tmp_path / "down"))
    assert time.monotonic() - began < BOUND_SECONDS
    assert_names_the_outage(str(refused.value), world.nodes[1:])

    second_lake = tmp_path / "second"
    second_config = world.config(second_lake)
    began = time.monotonic()
    with pytest.raises(Exception) as failed:
        extract(spark, world, second_config)
    assert time.monotonic() - began < BOUND_SECONDS
    assert_names_the_outage(str(failed.value), world.nodes[1:])
    assert set(lake_keys(second_config)) <= truth  # nothing, or only what the source has

    later = WHEN.replace(hour=13)
    began = time.monotonic()
    with pytest.raises(ReplicasUnavailable) as refused:
        publisher.publish(later, generation())
    assert time.monotonic() - began < BOUND_SECONDS
    assert_names_the_outage(str(refused.value), world.nodes[1:])

    # Every node back: the next runs complete, exactly once.
    world.sandbox.up()
    wait_until_healthy(world.client)
    assert detected(second_config) == expected_generations
    again = extract(spark, world, second_config)
    assert again.plan.pending == ()
    assert lake_keys(second_config) == Counter(dict.fromkeys(truth, 1))
    assert publisher.publish(later, generation())
    assert {WHEN, later} <= publisher.published_timestamps()


def assert_names_the_outage(message: str, down: list[str]) -> None:
    assert "QUORUM needs 2 replica(s), 1 alive" in message, message
    for node in down:
        assert node in message, message
