"""Replication to sink tables against the real database: the sink ends equal to the source.

An emulated raft cluster writes a workload on ``orders`` across a generation switch
(every operation the emulator logs: inserts, updates with nulls, collection additions,
removals and overwrites, row, partition and range deletes). Its changes are extracted
into the lake by the changes pipeline's Spark job, in two runs, and applied to sink
tables in other keyspaces through the code the DAG and the CLI run:

* a sink bootstrapped from a snapshot after the first half, and one bootstrapped while
  the second half is being written (the boundary), both equal the source after the
  apply, row for row and with equal write times;
* an apply SIGKILLed after some of its time slices moved the consistency point resumes
  to the same state; re-applying an applied range changes nothing; a backlog applied
  with a small slice bound is cut into slices no larger than it;
* a sink consistent until a time the lake no longer covers (the changes had to be
  re-bootstrapped after the log's TTL expired them) fails, naming the command that
  re-bootstraps it, and that command brings it back.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from replication_world import (
    CLOSE_SECONDS,
    COPY,
    assert_sink_matches,
    contents,
    create_sink_table,
    extract,
    fresh_cluster,
    settle,
    workload,
    world_config,
)

from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.sink_state import CqlSinkState
from cdcgen.changes.layout import read_delta, table_root
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.errors import ReplicationError
from cdcgen.core.generation import SourceMode
from cdcgen.core.replication_plan import ApplyPlan
from cdcgen.core.replication_record import ReplicationRecord
from cdcgen.replication.apply import SinkApplier
from cdcgen.replication.cql_ports import cql_ports
from cdcgen.replication.replication_run import (
    Mode,
    Replication,
    ReplicationRequest,
    bootstrap_sink,
    replicate,
    shape_of,
)
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import create_cdc_table, orders_table

pytestmark = pytest.mark.integration

PREFIX = "t_repl_"
KEYSPACE = f"{PREFIX}ks"
TABLE = TableRef(KEYSPACE, "orders")
SINKS = ("early", "boundary", "killed", "gap")


def sink_of(name: str) -> TableRef:
    return TableRef(f"{PREFIX}sink_{name}", "orders")


@dataclass
class World:
    client: CqlClient
    config: PipelineConfig
    contact_points: tuple[str, ...]
    bootstraps: dict[str, ReplicationRecord]


def bootstrap(
    world_client: CqlClient, config: PipelineConfig, name: str, *, replace: bool = False
) -> ReplicationRecord:
    job = Replication(TABLE, sink_of(name))
    mode = Mode.BOOTSTRAP_REPLACE if replace else Mode.BOOTSTRAP
    request = ReplicationRequest(job, f"bootstrap-{name}", mode)
    return bootstrap_sink(config, cql_ports(config, world_client, world_client, COPY), request)


@pytest.fixture(scope="module")
def world(contact_points: tuple[str, ...], tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[World]:  # fmt: skip
    lake = tmp_path_factory.mktemp("replication-lake")
    client = connect(contact_points)
    keyspaces = [KEYSPACE, f"{PREFIX}state", *(sink_of(name).keyspace for name in SINKS)]
    cluster = fresh_cluster(client, PREFIX, keyspaces, seed=31)
    config = world_config(PREFIX, contact_points, lake)
    create_cdc_table(cluster, orders_table(KEYSPACE))
    for name in SINKS:
        create_sink_table(client, sink_of(name))
    spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-replication-tests")
    start = datetime.now(UTC)
    workload(cluster, TABLE, 2.5, seed=41)
    middle = settle()
    assert extract(spark, config, TABLE, start, middle) > 0
    bootstraps = {name: bootstrap(client, config, name) for name in ("early", "killed", "gap")}
    cluster.join_node(SourceMode.RAFT, shards=2, vnodes=4, seed=32)  # a switch ~2 s from now
    writer = threading.Thread(target=workload, args=(cluster, TABLE, 4.0, 42))
    writer.start()
    time.sleep(2.0)
    bootstraps["boundary"] = bootstrap(client, config, "boundary")  # while writes go on
    writer.join()
    end = settle()
    assert extract(spark, config, TABLE, middle, end) > 0
    try:
        yield World(client, config, contact_points, bootstraps)
    finally:
        client.close()


def apply(world: World, name: str) -> ReplicationRecord:
    job = Replication(TABLE, sink_of(name))
    ports = cql_ports(world.config, world.client, world.client)
    return replicate(world.config, ports, ReplicationRequest(job, f"apply-{name}"))


def test_the_workload_logged_every_kind_of_change(world: World) -> None:
    """What the sinks below must reproduce: every operation ScyllaDB logs."""
    columns = [
        "cdc$operation",
        "v",
        "cdc$deleted_v",
        "cdc$deleted_tags",
        "cdc$deleted_elements_tags",
    ]
    lake = read_delta(table_root(world.config.lake_path, TABLE), columns=[*columns, "generation"])
    assert len(set(lake.column("generation").to_pylist())) >= 2  # across a switch
    rows = lake.to_pylist()
    operations = {row["cdc$operation"] for row in rows}
    assert {1, 2, 3, 4} <= operations and operations & {5, 6} and operations & {7, 8}
    assert any(row["cdc$deleted_v"] and row["v"] is None for row in rows)  # set to null
    assert any(row["cdc$deleted_elements_tags"] for row in rows)  # elements removed
    assert any(row["cdc$deleted_tags"] and row["cdc$operation"] == 1 for row in rows)


def test_bootstrapped_sinks_equal_the_source_after_the_apply(world: World) -> None:
    early, boundary = world.bootstraps["early"], world.bootstraps["boundary"]
    assert early.copied_rows > 0 and boundary.copied_rows > early.copied_rows / 2
    assert early.copy_ranges >= COPY.copy_splits  # the Spark copy, range by range
    for name in ("early", "boundary"):
        record = apply(world, name)
        assert record.status == "ok" and record.applied_log_rows > 0, record
        assert record.consistent_until > world.bootstraps[name].consistent_until
        assert_sink_matches(contents(world.client, TABLE), contents(world.client, sink_of(name)))
    again = apply(world, "early")  # nothing new in the lake: nothing applied
    assert again.applied_log_rows == 0
    assert again.consistent_until == record.consistent_until


def test_replaying_an_applied_range_changes_nothing(world: World) -> None:
    sink = sink_of("early")
    before = contents(world.client, sink)
    progress = CqlSinkState(world.client, TABLE, sink).progress()
    assert progress.consistent_until is not None
    since = datetime.fromisoformat(world.bootstraps["early"].consistent_until)
    plan = ApplyPlan(since, progress.consistent_until, progress.lake_version)
    state = CqlSinkState(world.client, TABLE, sink)
    job = Replication(TABLE, sink)
    settings = ReplicationSettings(slice_rows=300)
    ports = cql_ports(world.config, world.client, world.client, settings)
    shape = shape_of(ports, job)
    applier = SinkApplier(ports.writes, shape, state, "replay", settings)
    outcome = applier.apply(ports.lake, plan)
    assert outcome.log_rows > 0 and not outcome.rejected
    assert outcome.slices > 1 and outcome.largest_slice <= 300  # the bound held
    assert contents(world.client, sink) == before


def test_a_killed_apply_resumes_to_the_same_state(world: World) -> None:
    sink = sink_of("killed")
    state = CqlSinkState(world.client, TABLE, sink)
    before = state.progress().consistent_until
    env = {**os.environ, **world.config.to_env()}
    cli = str(Path(sys.executable).parent / "cdcgen")
    command = [
        cli, "replication", "apply", "--table", TABLE.qualified,
        "--sink-table", sink.qualified, "--slice-rows", "40", "--run-id", "killed",
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    moved = None
    while process.poll() is None and time.monotonic() < deadline:
        moved = state.progress().consistent_until
        if moved is not None and before is not None and moved > before:
            break
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    _, err = process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL, err.decode()[-2000:]
    killed_at = state.progress().consistent_until
    assert before is not None and killed_at is not None and killed_at > before, "no slice done"
    watermark = CqlCheckpointStore(world.client, world.config.checkpoint_keyspace)
    assert killed_at < watermark.progress(TABLE).watermark  # killed half-way
    record = apply(world, "killed")
    assert record.status == "ok" and record.consistent_from == killed_at.isoformat()
    assert_sink_matches(contents(world.client, TABLE), contents(world.client, sink))


def test_a_sink_behind_the_lake_fails_naming_the_re_bootstrap(world: World) -> None:
    sink = sink_of("gap")
    store = CqlCheckpointStore(world.client, world.config.checkpoint_keyspace)
    watermark = store.progress(TABLE).watermark
    assert watermark is not None
    store.advance_watermark(TABLE, watermark + timedelta(seconds=1))  # the log expired a gap
    with pytest.raises(ReplicationError) as failure:
        apply(world, "gap")
    message = str(failure.value)
    assert f"cdcgen replication bootstrap --table {TABLE} --sink-table {sink} --replace" in message
    assert "TTL" in message
    time.sleep(CLOSE_SECONDS + 1.0)  # a snapshot after the gap
    with pytest.raises(ReplicationError, match="--replace"):
        bootstrap(world.client, world.config, "gap")
    rebootstrapped = bootstrap(world.client, world.config, "gap", replace=True)
    assert rebootstrapped.truncated
    assert apply(world, "gap").status == "ok"
    assert_sink_matches(contents(world.client, TABLE), contents(world.client, sink))
