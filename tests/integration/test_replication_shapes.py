"""Every column shape replicated through the pipeline, against the real database.

The emulator's every-shape table (static columns, one column of each native type, a
blob of a few KB, non-frozen set, map and user type, frozen collections and user types,
a tuple holding a user type; :func:`~cdcgen_dev.emulator.log_schema.every_shape_table`)
without its non-frozen list, in an emulated raft cluster: a seeded workload, with and
without TTLs, is extracted into the lake; a sink is bootstrapped from a snapshot; more
writes follow across a generation switch and are extracted; the apply replays them. The
sink then equals the source row for row, with equal write times of every cell CQL can
read one of (static cells included), but for the bootstrap's one known difference
(:func:`replication_world.assert_sink_matches`).

The same table with its non-frozen list is refused by name at the shape check, before a
row of it is copied or a change applied.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from replication_world import (
    DDL_TIMEOUT,
    assert_sink_matches,
    extract,
    fresh_cluster,
    settle,
    world_config,
)

from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.sink_state import CqlSinkState
from cdcgen.adapters.table_schemas import CqlTableSchemas
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.cql_types import ParsedType
from cdcgen.core.errors import ReplicationError
from cdcgen.core.generation import SourceMode
from cdcgen.core.identifiers import quote
from cdcgen.replication.cql_ports import cql_ports
from cdcgen.replication.errors import SinkSchemaError
from cdcgen.replication.replication_run import (
    Mode,
    Replication,
    ReplicationRequest,
    bootstrap_sink,
    replicate,
)
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import SandboxCluster, WorkloadSpec, create_cdc_table, run_workload
from cdcgen_dev.emulator.log_schema import BaseTableSpec, every_shape_table, user_type_cql
from cdcgen_dev.emulator.log_schema import base_table_cql as table_cql

pytestmark = pytest.mark.integration

PREFIX = "t_replshape_"
KEYSPACE = f"{PREFIX}ks"
TABLE = TableRef(KEYSPACE, "every_shape")
LISTED = TableRef(KEYSPACE, "with_list")
SINK = TableRef(f"{PREFIX}sink", "every_shape")
#: The same, applied on Spark executors (two tasks by partition key, small slices).
SPARK_SINK = TableRef(f"{PREFIX}sink", "every_shape_on_spark")
LISTED_SINK = TableRef(f"{PREFIX}sink", "with_list")


def without_list(spec: BaseTableSpec) -> BaseTableSpec:
    return dataclasses.replace(spec, columns=tuple(c for c in spec.columns if c.name != "nf_list"))


@dataclass
class World:
    client: CqlClient
    cluster: SandboxCluster
    config: PipelineConfig


def create_sink(client: CqlClient, spec: BaseTableSpec, name: str | None = None) -> None:
    """An empty table of ``spec``'s definition (and its user types) in the sink keyspace."""
    sink = dataclasses.replace(spec, keyspace=SINK.keyspace, table=name or spec.table)
    client.session.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {SINK.keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}",
        timeout=DDL_TIMEOUT,
    )
    for cql in (*user_type_cql(sink), table_cql(sink)):
        client.session.execute(cql, timeout=DDL_TIMEOUT)


@pytest.fixture(scope="module")
def world(contact_points: tuple[str, ...], tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[World]:  # fmt: skip
    lake = tmp_path_factory.mktemp("replication-shapes-lake")
    client = connect(contact_points)
    keyspaces = [KEYSPACE, SINK.keyspace, f"{PREFIX}state"]
    cluster = fresh_cluster(client, PREFIX, keyspaces, seed=71)
    config = world_config(PREFIX, contact_points, lake)
    shapes = without_list(every_shape_table(KEYSPACE))
    listed = every_shape_table(KEYSPACE, LISTED.table)
    for spec in (shapes, listed):
        create_cdc_table(cluster, spec)
        create_sink(client, spec)
    create_sink(client, shapes, SPARK_SINK.table)
    try:
        yield World(client, cluster, config)
    finally:
        client.close()


def workload(cluster: SandboxCluster, table: TableRef, seed: int, seconds: float = 1.5) -> None:
    """Every shape's changes, without and with a TTL (an hour: none expires here)."""
    for offset, ttl in ((0, None), (1, 3600)):
        spec = WorkloadSpec(
            table.keyspace, table.table, rate=60, duration=timedelta(seconds=seconds / 2),
            keys=10, seed=seed + offset, base_ttl=ttl,
        )  # fmt: skip
        report = run_workload(cluster, spec)
        assert report.writes and not report.failed and not report.rejected, report.to_json()


def contents(client: CqlClient, table: TableRef) -> list[tuple[Any, ...]]:
    """Every row, its key first, then every column, then the write time of each cell CQL
    reads one of (atomic columns, static ones included), sorted by text."""
    definition = CqlTableSchemas(client).definition(table)
    assert definition is not None
    udts = definition.user_types
    keys = [*definition.partition_key, *definition.clustering_key]
    data = definition.data_columns

    def is_atomic(text: str) -> bool:
        kind = ParsedType.parse(text)
        return kind.frozen or (kind.name not in ("set", "list", "map") and kind.name not in udts)

    atomic = [c for c in data if is_atomic(definition.types[c])]
    selected = [quote(c) for c in (*keys, *data)] + [f"WRITETIME({quote(c)})" for c in atomic]
    rows = client.session.execute(
        f"SELECT {', '.join(selected)} FROM {quote(table.keyspace)}.{quote(table.table)}",
        timeout=60,
    )
    return sorted(tuple(repr(v) for v in row) for row in rows)


def test_every_shape_replicates_exactly_across_a_switch(world: World) -> None:
    spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-replication-shapes-tests")
    start = settle() - timedelta(seconds=2)
    workload(world.cluster, TABLE, seed=72)
    middle = settle()
    assert extract(spark, world.config, TABLE, start, middle) > 0
    job, on_spark = Replication(TABLE, SINK), Replication(TABLE, SPARK_SINK)
    ports = cql_ports(world.config, world.client, world.client)
    for each in (job, on_spark):
        booting = ReplicationRequest(each, "bootstrap", Mode.BOOTSTRAP)
        booted = bootstrap_sink(world.config, ports, booting)
        assert booted.copied_rows > 0
    world.cluster.join_node(SourceMode.RAFT, shards=2, vnodes=4, seed=73)  # a switch soon
    writer = threading.Thread(target=workload, args=(world.cluster, TABLE, 74, 4.0))
    writer.start()
    writer.join()
    end = settle()
    assert extract(spark, world.config, TABLE, middle, end) > 0
    record = replicate(world.config, ports, ReplicationRequest(job, "apply"))
    assert record.status == "ok" and not record.rejected, record
    operations = set(record.applied_operations)
    assert {"insert", "update", "row_delete", "partition_delete"} <= operations, operations
    source, sink = contents(world.client, TABLE), contents(world.client, SINK)
    assert_sink_matches(source, sink, keys=2)
    # On Spark executors, partitioned by partition key, in slices: the same sink.
    settings = ReplicationSettings().with_overrides(apply_tasks=2, slice_rows=300)
    on_executors = cql_ports(
        world.config, world.client, world.client, settings, sink_config=world.config, spark=spark
    )
    spread = replicate(world.config, on_executors, ReplicationRequest(on_spark, "apply"))
    assert spread.status == "ok" and not spread.rejected, spread
    assert spread.applied_log_rows > 0, spread
    assert spread.slices > 1, spread
    assert contents(world.client, SPARK_SINK) == sink


def test_a_non_frozen_list_is_refused_by_name_before_anything_is_copied(world: World) -> None:
    time.sleep(0.1)
    workload(world.cluster, LISTED, seed=75, seconds=1.0)
    job = Replication(LISTED, LISTED_SINK)
    ports = cql_ports(world.config, world.client, world.client)
    with pytest.raises(SinkSchemaError, match="column nf_list is a non-frozen list"):
        bootstrap_sink(world.config, ports, ReplicationRequest(job, "bootstrap", Mode.BOOTSTRAP))
    with pytest.raises((SinkSchemaError, ReplicationError)):
        replicate(world.config, ports, ReplicationRequest(job, "apply", Mode.BOOTSTRAP_IF_NEEDED))
    assert contents(world.client, LISTED_SINK) == []
    assert CqlSinkState(world.client, LISTED, LISTED_SINK).progress().consistent_until is None
