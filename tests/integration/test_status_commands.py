"""`cdcgen changes status` and `cdcgen replication status` against a real Cassandra.

The state they read is made by the pipeline's own code: an emulated raft cluster writes
a workload, a changes run extracts it into the lake (Spark, as the job builds it) and
saves its watermark; a second run's driver dies after its first checkpointed job, which
leaves checkpoints newer than the watermark; a sink is bootstrapped and applied to; a
second sink gets a copy that starts and never ends. The commands run in-process,
configured by ``CDCGEN_*`` variables, and must say what that state says, change nothing
(the schema is the same after them), and name a keyspace or table that is not there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from changes_fakes import CheckpointsFailingAfter, InjectedFault
from replication_world import (
    SETTINGS,
    create_sink_table,
    fresh_cluster,
    settle,
    workload,
    world_config,
)

from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.sink_state import CqlSinkState
from cdcgen.changes.changes_run import ChangesRequest, extract_changes
from cdcgen.changes.job import table_adapters
from cdcgen.cli import main
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.errors import ExitCode
from cdcgen.core.replication_record import ReplicationRecord
from cdcgen.core.windows import Interval, Mode
from cdcgen.replication.cql_ports import cql_ports
from cdcgen.replication.replication_run import (
    Mode as ReplicationMode,
)
from cdcgen.replication.replication_run import (
    Replication,
    ReplicationRequest,
    bootstrap_sink,
    replicate,
)
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import create_cdc_table, orders_table

pytestmark = pytest.mark.integration

PREFIX = "t_status_"
KEYSPACE = f"{PREFIX}ks"
TABLE = TableRef(KEYSPACE, "orders")
SINK = TableRef(f"{PREFIX}sink", "orders")
COPYING = TableRef(f"{PREFIX}sink", "copying")
STATE = f"{PREFIX}state"
FIRST_RUN, SECOND_RUN, KILLED_RUN = "status-run-1", "status-run-2", "status-run-3"


@dataclass
class World:
    client: CqlClient
    config: PipelineConfig
    env: dict[str, str]
    applied: ReplicationRecord
    copy_started: datetime


def extract(
    spark: Any, client: CqlClient, config: PipelineConfig, interval: Interval, run_id: str,
    *, dies_after_saves: int | None = None,
) -> None:  # fmt: skip
    settings = SETTINGS.with_overrides(buckets_per_job=1)
    built = table_adapters(client, spark, config, settings, TABLE)
    ports = built.ports(validate=False)
    if dies_after_saves is not None:
        failing = CheckpointsFailingAfter(ports.checkpoints, dies_after_saves)
        ports = replace(ports, checkpoints=failing)
    request = ChangesRequest(TABLE, interval, Mode.INCREMENTAL, run_id=run_id)
    extract_changes(request, ports, config, settings, cdc_ttl=built.log_table.ttl)


@pytest.fixture(scope="module")
def world(
    contact_points: tuple[str, ...], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    lake = tmp_path_factory.mktemp("status-lake")
    client = connect(contact_points)
    cluster = fresh_cluster(client, PREFIX, [KEYSPACE, STATE, SINK.keyspace], seed=51)
    config = world_config(PREFIX, contact_points, lake)
    create_cdc_table(cluster, orders_table(KEYSPACE))
    create_sink_table(client, SINK)
    client.session.execute(f"CREATE TABLE {COPYING.qualified} (pk int PRIMARY KEY)", timeout=120)
    spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-status-tests")
    start = datetime.now(UTC)
    workload(cluster, TABLE, 1.5, seed=52)
    middle = settle()
    extract(spark, client, config, Interval(start, middle), FIRST_RUN)
    ports = cql_ports(config, client, client, ReplicationSettings(copy_splits=8))
    job = Replication(TABLE, SINK)
    bootstrap_sink(config, ports, ReplicationRequest(job, "status-boot", ReplicationMode.BOOTSTRAP))
    workload(cluster, TABLE, 1.0, seed=53)
    end = settle()
    extract(spark, client, config, Interval(middle, end), SECOND_RUN)
    applied = replicate(config, ports, ReplicationRequest(job, "status-apply"))
    copying = CqlSinkState(client, TABLE, COPYING)
    copy_started = datetime.now(UTC)
    copying.start_copy(copy_started - timedelta(seconds=1), truncate=False, run_id="status-copy")
    workload(cluster, TABLE, 1.0, seed=54)
    last = settle()
    with pytest.raises(InjectedFault):
        extract(spark, client, config, Interval(end, last), KILLED_RUN, dies_after_saves=1)
    env = {**config.to_env(), "CDCGEN_STATE_KEYSPACE": STATE}
    try:
        yield World(client, config, env, applied, copy_started)
    finally:
        client.close()


def run(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    *argv: str,
) -> tuple[int, str, str]:
    for variable in os.environ:
        if variable.startswith("CDCGEN_"):
            monkeypatch.delenv(variable)
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def schema_of(client: CqlClient) -> list[tuple[str, str]]:
    rows = client.session.execute("SELECT keyspace_name, table_name FROM system_schema.tables")
    return sorted((r.keyspace_name, r.table_name) for r in rows)


def test_changes_status_says_what_the_state_tables_say(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = schema_of(world.client)
    progress = CqlCheckpointStore(world.client, STATE).progress(TABLE)
    assert progress.watermark is not None and progress.run_id == SECOND_RUN
    status, out, err = run(monkeypatch, capsys, world.env, "changes", "status", "--json")
    assert status == ExitCode.OK, err
    (line,) = [json.loads(text) for text in out.splitlines()]
    assert line["table"] == TABLE.qualified
    assert datetime.fromisoformat(line["watermark"]) == progress.watermark
    now = datetime.now(UTC)
    assert 0 < line["lag_seconds"] <= (now - progress.watermark).total_seconds()
    # The killed run saved a checkpoint after the watermark: it stopped part-way.
    assert (line["last_run"], line["outcome"]) == (KILLED_RUN, "stopped part-way")
    assert datetime.fromisoformat(line["last_run_at"]) > progress.watermark_updated_at
    assert line["lake_version"] == progress.lake_version

    status, out, err = run(monkeypatch, capsys, world.env, "changes", "status")
    assert status == ExitCode.OK, err
    header, row = out.splitlines()
    assert header.split() == ["TABLE", "WATERMARK", "LAG", "LAST", "RUN", "AT", "OUTCOME"]
    assert row.startswith(TABLE.qualified) and KILLED_RUN in row
    assert row.endswith("stopped part-way")
    assert schema_of(world.client) == before  # read, never created or altered


def test_replication_status_says_what_the_sinks_state_says(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = schema_of(world.client)
    sink = CqlSinkState(world.client, TABLE, SINK).progress()
    argv = ("replication", "status", "--json")
    status, out, err = run(monkeypatch, capsys, world.env, *argv)
    assert status == ExitCode.OK, err
    every = {line["sink_table"]: line for line in map(json.loads, out.splitlines())}
    lines = {name: line for name, line in every.items() if name.startswith(PREFIX)}
    assert set(lines) == {SINK.qualified, COPYING.qualified}  # found without being named
    applied = lines[SINK.qualified]
    assert applied["source_table"] == TABLE.qualified
    assert datetime.fromisoformat(applied["consistent_until"]) == sink.consistent_until
    assert (applied["last_run"], applied["outcome"]) == ("status-apply", "applied")
    assert world.applied.rejected_count == applied["rejected"] == 0
    assert applied["lag_seconds"] > 0
    copying = lines[COPYING.qualified]
    assert (copying["last_run"], copying["outcome"]) == ("status-copy", "copy unfinished")
    assert copying["copied_ranges"] == 0 and copying["consistent_until"] is None
    assert abs(datetime.fromisoformat(copying["last_run_at"]) - world.copy_started) < timedelta(
        seconds=5
    )

    named = ("replication", "status", "--sink-keyspace", SINK.keyspace)
    status, out, err = run(monkeypatch, capsys, world.env, *named)
    assert status == ExitCode.OK, err
    assert [line.split()[1] for line in out.splitlines()[1:]] == [
        COPYING.qualified,
        SINK.qualified,
    ]
    assert "copy unfinished (0 ranges copied)" in out
    assert schema_of(world.client) == before


def test_a_keyspace_or_table_that_is_not_there_is_named_and_not_created(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = schema_of(world.client)
    missing = f"{PREFIX}nowhere"
    argv = ("changes", "status", "--state-keyspace", missing)
    status, out, err = run(monkeypatch, capsys, world.env, *argv)
    assert status == ExitCode.TERMINAL and out == ""
    assert f"keyspace {missing} does not exist: no changes run has saved state there" in err
    argv = ("changes", "status", "--state-keyspace", KEYSPACE)  # exists, holds no state
    status, out, err = run(monkeypatch, capsys, world.env, *argv)
    assert status == ExitCode.TERMINAL
    assert f"{KEYSPACE}.cdc_table_progress does not exist" in err
    argv = ("replication", "status", "--sink-keyspace", missing)
    status, out, err = run(monkeypatch, capsys, world.env, *argv)
    assert status == ExitCode.TERMINAL and f"keyspace {missing} does not exist: no repl" in err
    assert schema_of(world.client) == before


def test_a_status_of_an_unreachable_cluster_is_transient(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    env = {**world.env, "CDCGEN_PORT": port}
    status, _, err = run(monkeypatch, capsys, env, "changes", "status")
    assert status == ExitCode.TRANSIENT and "no CQL node answered" in err
