"""Continuous mode against a real Cassandra and Spark: a table and its sink followed while
the workload writes and a new generation starts.

One emulated cluster (a node joins as the writes begin: the follow crosses a generation
switch) is followed by :func:`cdcgen.changes.table_follow.follow_changes` in one thread, cycle
after cycle (without the row checks, which would set its pace on a loaded machine: the
changes DAG's e2e runs a follow with them), and its sink by
:func:`cdcgen.replication.sink_follow.follow_replication` in another, both while the writes
go on. Then: every logged row is in the lake exactly once, the watermark is the last
cycle's closing instant, each cycle closed later than the one before, and the sink
equals the source row for row with its write times.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from replication_world import (
    COPY,
    SETTINGS,
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
from cdcgen.changes.changes_run import ChangesRequest
from cdcgen.changes.errors import NothingClosed
from cdcgen.changes.layout import table_root
from cdcgen.changes.table_follow import follow_changes
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.changes_result import ChangesRunResult
from cdcgen.core.errors import LakeNotStarted
from cdcgen.core.follow_loop import FollowPace
from cdcgen.core.generation import SourceMode
from cdcgen.core.replication_record import ReplicationRecord
from cdcgen.core.windows import Interval
from cdcgen.replication.cql_ports import cql_ports
from cdcgen.replication.replication_run import (
    Mode,
    Replication,
    ReplicationRequest,
    bootstrap_sink,
)
from cdcgen.replication.sink_follow import follow_replication
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import SandboxCluster, create_cdc_table, orders_table

pytestmark = pytest.mark.integration

PREFIX = "t_follow_"
TABLE = TableRef(f"{PREFIX}ks", "orders")
SINK = TableRef(f"{PREFIX}sink", "orders")
EVERY = timedelta(seconds=2)
FOLLOW = timedelta(seconds=60)  # long enough for two bursts of writes on a loaded machine


@dataclass
class Followed:
    client: CqlClient
    cluster: SandboxCluster
    config: PipelineConfig
    changes: ChangesRunResult
    applied: list[ReplicationRecord]  # follows of a few cycles each, in order
    before: int  # rows the scheduled run before the follow extracted
    so_far: list[ChangesRunResult]  # the follow's sum after each of its cycles


@pytest.fixture(scope="module")
def followed(
    contact_points: tuple[str, ...], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Followed]:
    lake = tmp_path_factory.mktemp("follow-lake")
    client = connect(contact_points)
    keyspaces = [TABLE.keyspace, f"{PREFIX}state", SINK.keyspace]
    cluster = fresh_cluster(client, PREFIX, keyspaces, seed=51)
    config = world_config(PREFIX, contact_points, lake)
    create_cdc_table(cluster, orders_table(TABLE.keyspace))
    create_sink_table(client, SINK)
    spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-follow-tests")
    job = Replication(TABLE, SINK)
    # As a deployment starts: a scheduled changes run, the sink's bootstrap, then the follows.
    first = datetime.now(UTC)
    workload(cluster, TABLE, 1.5, seed=50)
    start = settle()
    before = extract(spark, config, TABLE, first, start)
    assert before > 0
    bootstrap = ReplicationRequest(job, "follow-bootstrap", Mode.BOOTSTRAP)
    bootstrap_sink(config, cql_ports(config, client, client, COPY, spark=spark), bootstrap)
    begun = datetime.now(UTC)
    cluster.join_node(SourceMode.RAFT, shards=2, vnodes=4, seed=52)  # a switch ~1 s from now
    store = CqlCheckpointStore(client, config.checkpoint_keyspace)

    def write_in_two_bursts() -> None:
        """A burst, then another once a cycle has extracted the first: however long
        this machine takes per cycle, two cycles find rows."""
        workload(cluster, TABLE, 3.0, 53)
        written = datetime.now(UTC)
        deadline = time.monotonic() + 50
        while time.monotonic() < deadline:
            watermark = store.progress(TABLE).watermark
            if watermark is not None and watermark > written:
                break
            time.sleep(0.5)
        workload(cluster, TABLE, 2.0, 54)

    writer = threading.Thread(target=write_in_two_bursts)
    outcome: dict[str, Any] = {}
    so_far: list[ChangesRunResult] = []  # what the job writes to its result file each cycle

    def follow_table() -> None:
        request = ChangesRequest(TABLE, Interval(start, start + timedelta(minutes=1)), run_id="f")
        pace = FollowPace(begun + FOLLOW, EVERY)
        try:
            outcome["changes"] = follow_changes(
                config, request, pace, settings=SETTINGS, spark=spark, validate=False,
                on_cycle=so_far.append,
            )  # fmt: skip
        except BaseException as exc:  # reported by the test, not lost in the thread
            outcome["changes"] = exc

    follower = threading.Thread(target=follow_table)
    writer.start()
    follower.start()
    sink = connect(contact_points)
    applied: list[ReplicationRecord] = []
    try:
        # Follows of a few cycles each while the table is followed (however slow this
        # machine makes its cycles), then one more once it has ended: the sink's last.
        ports = cql_ports(config, client, sink)
        while not applied or follower.is_alive():
            request = ReplicationRequest(job, f"follow-apply-{len(applied)}")
            pace = FollowPace(datetime.now(UTC) + 3 * EVERY, EVERY)
            applied.append(follow_replication(config, ports, request, pace))
        follower.join()
        pace = FollowPace(datetime.now(UTC) + 2 * EVERY, EVERY)
        request = ReplicationRequest(job, "follow-apply-last")
        applied.append(follow_replication(config, ports, request, pace))
    finally:
        writer.join()
        follower.join()
        sink.close()
    changes = outcome["changes"]
    if isinstance(changes, BaseException):
        raise changes
    try:
        yield Followed(client, cluster, config, changes, applied, before, so_far)
    finally:
        client.close()


def test_every_logged_row_is_in_the_lake_once_across_the_generation_switch(
    followed: Followed,
) -> None:
    result = followed.changes
    assert result.status == "done", result.error
    logged = followed.client.session.execute(
        f"SELECT COUNT(*) FROM {TABLE.qualified_log}", timeout=60
    ).one()[0]
    assert logged > 0
    assert result.rows_written == logged - followed.before
    assert sum(cycle.rows for cycle in result.cycles) == result.rows_written
    lake = DeltaTable(str(table_root(Path(followed.config.lake_path), TABLE)))
    assert lake.to_pyarrow_table().num_rows == logged  # once each: no duplicate, no loss
    assert len(result.rows_per_generation) == 2  # the follow crossed the new generation


def test_each_cycle_closes_later_and_the_watermark_is_the_last_close(followed: Followed) -> None:
    cycles = followed.changes.cycles
    assert len([cycle for cycle in cycles if cycle.rows]) >= 2  # extracted as they closed
    closes = [datetime.fromisoformat(cycle.closed_until) for cycle in cycles]
    assert closes == sorted(set(closes))
    assert followed.changes.watermark is not None
    assert datetime.fromisoformat(followed.changes.watermark) == closes[-1]
    # After each cycle, the sum so far (a follow killed then still says what it did).
    assert [len(each.cycles) for each in followed.so_far] == list(range(1, len(cycles) + 1))
    assert followed.so_far[-1].rows_written == followed.changes.rows_written
    for cycle in cycles:  # each cycle was durable only after its windows had closed
        leeway = followed.config.generation_leeway + followed.config.confidence_window
        closed = datetime.fromisoformat(cycle.closed_until)
        assert datetime.fromisoformat(cycle.finished_at) >= closed + leeway


def test_the_followed_sink_equals_the_source(followed: Followed) -> None:
    for each in followed.applied:
        assert each.status == "ok" and each.rejected_count == 0
        assert len(each.cycles) >= 2
        assert each.applied_log_rows == sum(cycle.applied_log_rows for cycle in each.cycles)
    assert sum(each.applied_log_rows for each in followed.applied) == followed.changes.rows_written
    # The sink moved while the table was still followed, not only after.
    assert any(each.applied_log_rows for each in followed.applied[:-1])
    applied = followed.applied[-1]
    assert applied.consistent_until is not None and followed.changes.watermark is not None
    until = datetime.fromisoformat(applied.consistent_until)
    assert until == datetime.fromisoformat(followed.changes.watermark)
    assert_sink_matches(contents(followed.client, TABLE), contents(followed.client, SINK))


def test_a_sink_follow_waits_for_the_lake_s_first_watermark(followed: Followed) -> None:
    """Continuous mode started on a new table: its sink is bootstrapped as soon as the
    changes' first cycle has recorded where the table starts, before that cycle's
    watermark. The sink's follow applies nothing until the watermark comes, then what
    it covers; one that never sees it fails naming the changes DAG."""
    client, config = followed.client, followed.config
    late = TableRef(TABLE.keyspace, "orders_late")
    sink = TableRef(f"{PREFIX}sink_late", "orders_late")
    create_cdc_table(followed.cluster, orders_table(late.keyspace, late.table))
    create_sink_table(client, sink)
    start = datetime.now(UTC) - timedelta(seconds=10)  # before the table's first write
    CqlCheckpointStore(client, config.checkpoint_keyspace).record_start(late, start, "late")
    job = Replication(late, sink)
    ports = cql_ports(config, client, client, COPY)
    bootstrap_sink(config, ports, ReplicationRequest(job, "late-bootstrap", Mode.BOOTSTRAP))
    pace = FollowPace(datetime.now(UTC) + 3 * EVERY, EVERY)
    with pytest.raises(LakeNotStarted, match="cdc_changes"):
        follow_replication(config, ports, ReplicationRequest(job, "late-never"), pace)

    extracted: list[int] = []

    def first_cycle() -> None:
        workload(followed.cluster, late, 1.5, 55)
        spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-follow-tests")
        extracted.append(extract(spark, config, late, start, settle()))

    changes = threading.Thread(target=first_cycle)
    changes.start()
    pace = FollowPace(datetime.now(UTC) + timedelta(seconds=40), EVERY)
    try:
        applied = follow_replication(config, ports, ReplicationRequest(job, "late"), pace)
    finally:
        changes.join()
    assert extracted and applied.applied_log_rows == extracted[0] > 0
    assert applied.cycles[0].applied_log_rows == extracted[0]  # the first it could apply
    assert_sink_matches(contents(client, late), contents(client, sink))


def test_a_follow_that_closes_nothing_fails_naming_the_node(followed: Followed) -> None:
    """A node whose clock cannot be read (down) closes no window: after the clock wait
    timeout the follow fails, transiently, naming it, as the scheduled mode's wait does,
    instead of ending as a success that extracted nothing."""
    cluster = followed.cluster
    down = cluster.nodes()[-1].name
    config = followed.config.with_overrides(clock_wait_timeout=timedelta(seconds=2))
    now = datetime.now(UTC)
    request = ChangesRequest(TABLE, Interval(now, now + timedelta(minutes=1)), run_id="stuck")
    pace = FollowPace(now + timedelta(seconds=60), timedelta(seconds=1))
    spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-follow-tests")
    cluster.set_node_up(down, False)
    try:
        with pytest.raises(NothingClosed, match=down) as raised:
            follow_changes(config, request, pace, settings=SETTINGS, spark=spark, validate=False)
    finally:
        cluster.set_node_up(down, True)
    assert "no window closed for" in str(raised.value)
    assert datetime.now(UTC) < now + timedelta(seconds=30)  # long before the follow's end
