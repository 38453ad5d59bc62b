"""Replication refuses what would lose or destroy data, against the real database.

* **The snapshot time comes from the source nodes' clocks.** Every node of an emulated
  cluster is 20 s behind this worker: a bootstrap that took its time from the worker's
  clock would put it 20 s past writes still to come, which neither the copy (taken
  before them) nor the apply (starting after that time) would carry. The writes made
  after the bootstrap must reach the sink.
* **A sink that is the source table itself is refused**, through the command a user
  runs with no sink cluster set (``--sink-keyspace`` naming the source's keyspace): the
  source keeps every row, and a dry run says so as well, writing nothing.
* **A dry run of a destructive bootstrap** names the table it would truncate, and
  leaves the sink table, its rows and its state as they were.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from replication_world import (
    CLOSE_SECONDS,
    COPY,
    assert_sink_matches,
    contents,
    create_sink_table,
    extract,
    fresh_cluster,
    workload,
    world_config,
)

from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.sink_state import PROGRESS, CqlSinkState
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.errors import ExitCode, ReplicationError
from cdcgen.replication.cql_ports import cql_ports
from cdcgen.replication.replication_run import (
    Mode,
    Replication,
    ReplicationRequest,
    bootstrap_sink,
    replicate,
)
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import SandboxCluster, create_cdc_table, orders_table

pytestmark = pytest.mark.integration

PREFIX = "t_replsafe_"
KEYSPACE = f"{PREFIX}ks"
TABLE = TableRef(KEYSPACE, "orders")
SINK = TableRef(f"{PREFIX}sink", "orders")
BEHIND = timedelta(seconds=-20)


@dataclass
class World:
    client: CqlClient
    cluster: SandboxCluster
    config: PipelineConfig


def node_now(cluster: SandboxCluster) -> Any:
    return cluster.clock(cluster.nodes()[0])


def settle(cluster: SandboxCluster) -> Any:
    """A window end just past the last write, in the nodes' time, once it is closed."""
    import time

    end = node_now(cluster) + timedelta(milliseconds=5)
    time.sleep(CLOSE_SECONDS)
    return end


@pytest.fixture(scope="module")
def world(contact_points: tuple[str, ...], tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[World]:  # fmt: skip
    lake = tmp_path_factory.mktemp("replication-safety-lake")
    client = connect(contact_points)
    keyspaces = [KEYSPACE, SINK.keyspace, f"{PREFIX}state"]
    cluster = fresh_cluster(client, PREFIX, keyspaces, seed=61, skew=BEHIND)
    config = world_config(PREFIX, contact_points, lake)
    create_cdc_table(cluster, orders_table(KEYSPACE))
    create_sink_table(client, SINK)
    try:
        yield World(client, cluster, config)
    finally:
        client.close()


def test_a_worker_clock_ahead_of_the_nodes_loses_no_write(world: World) -> None:
    spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-replication-safety-tests")
    start = node_now(world.cluster) - timedelta(seconds=1)
    workload(world.cluster, TABLE, 1.5, seed=62, keys=30)
    middle = settle(world.cluster)
    assert extract(spark, world.config, TABLE, start, middle) > 0
    job = Replication(TABLE, SINK)
    client = world.client
    booting = ReplicationRequest(job, "bootstrap", Mode.BOOTSTRAP)
    booted = bootstrap_sink(world.config, cql_ports(world.config, client, client, COPY), booting)
    snapshot = booted.consistent_until
    assert snapshot < (node_now(world.cluster) - timedelta(seconds=1)).isoformat()
    workload(world.cluster, TABLE, 1.5, seed=63, keys=30)  # stamped after the snapshot
    end = settle(world.cluster)
    assert extract(spark, world.config, TABLE, middle, end) > 0
    record = replicate(
        world.config, cql_ports(world.config, client, client), ReplicationRequest(job, "apply")
    )
    assert record.status == "ok" and record.applied_log_rows > 0, record
    assert_sink_matches(contents(world.client, TABLE), contents(world.client, SINK))


def cli(config: PipelineConfig, *args: str) -> subprocess.CompletedProcess[str]:
    """``cdcgen replication ...`` as a user runs it: the source's settings, no sink set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CDCGEN_SINK_")}
    command = [str(Path(sys.executable).parent / "cdcgen"), "replication", *args]
    return subprocess.run(
        command, env={**env, **config.to_env()}, capture_output=True, text=True, timeout=300
    )


def test_a_sink_that_is_the_source_is_refused_and_the_source_kept(world: World) -> None:
    before = contents(world.client, TABLE)
    assert before, "the source table is empty: nothing would show a truncation"
    args = ["bootstrap", "--table", TABLE.qualified, "--sink-keyspace", KEYSPACE, "--replace"]
    for extra in ([], ["--dry-run"]):
        done = cli(world.config, *args, *extra)
        assert done.returncode == ExitCode.TERMINAL, done.stdout + done.stderr
        assert f"the sink {TABLE} is the source table itself" in done.stderr
    apply = cli(world.config, "apply", "--table", TABLE.qualified, "--sink-keyspace", KEYSPACE)
    assert apply.returncode == ExitCode.TERMINAL and "source table itself" in apply.stderr
    assert contents(world.client, TABLE) == before
    keyspace = world.client.cluster.metadata.keyspaces[KEYSPACE]
    assert PROGRESS not in keyspace.tables  # no state written on the source either
    with pytest.raises(ValueError, match="sink keyspace 'system_auth' is a system keyspace"):
        Replication.of(TABLE.qualified, sink_keyspace="system_auth")


def test_a_dry_run_names_what_it_would_truncate_and_writes_nothing(world: World) -> None:
    job = Replication(TABLE, SINK)
    state = CqlSinkState(world.client, TABLE, SINK)
    rows, progress = contents(world.client, SINK), state.progress()
    assert rows, "the sink holds no rows: a truncation would not show"
    done = cli(
        world.config, "bootstrap", "--table", TABLE.qualified, "--sink-table", SINK.qualified,
        "--replace", "--dry-run",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["dry_run"] and record["would_truncate"] == SINK.qualified, record
    assert progress.consistent_until is not None
    assert record["snapshot_at"] > progress.consistent_until.isoformat()
    assert contents(world.client, SINK) == rows and state.progress() == progress
    dry = ReplicationRequest(job, "dry", Mode.BOOTSTRAP, dry_run=True)
    with pytest.raises(ReplicationError, match="--replace"):  # without it: refused, also dry
        bootstrap_sink(world.config, cql_ports(world.config, world.client, world.client), dry)
