"""Tablets churn on the real Cassandra: a CDC table's tablets split and merge while nodes
join and leave, a new stream set every few seconds, and the changes and replication runs
follow.

ScyllaDB's own CDC replicator was found not to replicate all data under tablets and
topology changes (scylladb#27121). Here a table on tablets goes through seven changes,
five of them new stream sets (every stream new), each followed by writes until just past
the newest stream set's start; changes runs come after some of them, so that one run
reads several stream sets. Then the lake equals a raw scan of the log, every row once,
value for value; every stream set was written to; and a sink bootstrapped before the
churn equals the source, write times included.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from lake_forms import scan_log
from replication_world import (
    COPY,
    LEEWAY,
    assert_sink_matches,
    contents,
    create_sink_table,
    extract,
    fresh_cluster,
    settle,
    workload,
    world_config,
)
from torture_world import assert_lake_equals_log, wait_until

from cdcgen.adapters.cql import connect
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.generation import SourceMode
from cdcgen.replication.cql_ports import cql_ports
from cdcgen.replication.replication_run import (
    Mode,
    Replication,
    ReplicationRequest,
    bootstrap_sink,
    replicate,
)
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import create_cdc_table, merge_tablets, orders_table, split_tablets
from cdcgen_dev.emulator.tablets import tablet_stream_sets

pytestmark = pytest.mark.integration

PREFIX = "t_tabchurn_"
TABLE = TableRef(f"{PREFIX}ks", "orders")
SINK = TableRef(f"{PREFIX}sink", "orders")


def test_the_lake_and_the_sink_follow_tablets_splitting_and_merging_as_nodes_come_and_go(
    contact_points: tuple[str, ...], tmp_path: Path
) -> None:
    client = connect(contact_points)
    try:
        keyspaces = [TABLE.keyspace, SINK.keyspace, f"{PREFIX}state"]
        cluster = fresh_cluster(client, PREFIX, keyspaces, seed=3, mode=SourceMode.TABLETS)
        create_cdc_table(cluster, orders_table(TABLE.keyspace), tablets=2, seed=3)
        create_sink_table(client, SINK)
        config = world_config(PREFIX, contact_points, tmp_path / "lake")
        extra = {**config.extra, "cdc_tables": TABLE.qualified}
        config = config.with_overrides(source_mode=SourceMode.TABLETS, extra=extra)
        spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-tablets-churn")

        def write_across_the_newest_stream_set(seed: int) -> None:
            """Writes from now until just past the newest stream set's start."""
            newest = tablet_stream_sets(cluster, TABLE.keyspace, TABLE.table)[-1].timestamp
            seconds = max(1.0, (newest + LEEWAY - datetime.now(UTC)).total_seconds() + 0.5)
            workload(cluster, TABLE, seconds, seed=seed, keys=30)

        wait_until(tablet_stream_sets(cluster, TABLE.keyspace, TABLE.table)[-1].timestamp + LEEWAY)
        start = datetime.now(UTC)
        write_across_the_newest_stream_set(seed=1)
        end = settle()
        extract(spark, config, TABLE, start, end)
        job = Replication(TABLE, SINK)
        booting = ReplicationRequest(job, "bootstrap", Mode.BOOTSTRAP)
        booted = bootstrap_sink(config, cql_ports(config, client, client, COPY), booting)
        assert booted.consistent_until is not None, booted

        def resize(split: bool, seed: int) -> Callable[[], object]:
            change = split_tablets if split else merge_tablets
            return lambda: change(cluster, TABLE.keyspace, TABLE.table, seed=seed)

        # (what happens, whether a changes run follows it)
        churn: list[tuple[Callable[[], object], bool]] = [
            (resize(split=True, seed=11), False),  # 2 -> 4 tablets
            (lambda: cluster.join_node(SourceMode.TABLETS, shards=2, vnodes=4, seed=12), True),
            (resize(split=False, seed=13), False),  # 4 -> 2
            (lambda: cluster.leave_node("node1", SourceMode.TABLETS), False),
            (resize(split=True, seed=14), True),  # 2 -> 4
            (resize(split=True, seed=15), False),  # 4 -> 8
            (resize(split=False, seed=16), True),  # 8 -> 4
        ]
        for number, (change, then_extract) in enumerate(churn):
            change()
            write_across_the_newest_stream_set(seed=20 + number)
            if then_extract:
                start, end = end, settle()
                assert extract(spark, config, TABLE, start, end) > 0

        stream_sets = tablet_stream_sets(cluster, TABLE.keyspace, TABLE.table)
        assert len(stream_sets) == 6 and len(stream_sets[-1].streams) == 4
        log, _ = scan_log(client, TABLE)
        written = {stream for stream, _, _ in log}
        for stream_set in stream_sets:
            assert written & {s.raw for s in stream_set.streams}, stream_set.timestamp
        assert_lake_equals_log(client, config, TABLE)

        record = replicate(
            config, cql_ports(config, client, client), ReplicationRequest(job, "apply")
        )
        assert record.status == "ok" and not record.rejected, record
        assert_sink_matches(contents(client, TABLE), contents(client, SINK))
    finally:
        client.close()
