"""``airflow dags test cdc_replication``: a new sink table bootstrapped by a Spark job on a
standalone cluster, into another Cassandra cluster.

The source is a plain ``orders`` table of the sandbox (127.0.0.1), its rows each written
at its own time, some with a TTL; the sink is the same definition on the second,
separate cluster (127.0.0.2), named by the ``cdcgen_sink`` connection only. The lake's
coverage of the source is recorded directly in the changes pipeline's progress, ending
before the snapshot (the apply then has nothing to bring). The DAG's plan sees a sink
table never bootstrapped, so its bootstrap task submits the copy with spark-submit to a
Spark standalone master whose executors run in the workers' own JVMs and Python
workers, without the driver's ``CDCGEN_*`` environment or import path. Then:

* the copy ran there (executors on both workers, the shipped package, no failure) and
  the sink on the second cluster equals the source row for row, write times included:
  the sink's hosts and the source's reached the executors inside their tasks;
* the apply ran after it and the sink's consistency point is the bootstrap's, kept on
  the sink cluster only;
* with the OpenLineage provider's file transport, the bootstrap reported the source
  table in and the sink table out, the apply the lake's changes table in and the sink
  table out;
* a second run finds the sink bootstrapped and skips the bootstrap (no Spark application),
  and sends each table's metrics through Airflow's StatsD, tagged (InfluxDB style) by
  cluster and table, with the values its summary holds.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from dag_scenarios import CLUSTER_ENV, Scenario, assert_ok, assert_ran_on, on_cluster
from lineage_events import finished_tasks, lineage_env
from map_indexes import rendered_map_indexes
from observability import Listener, listening

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.generation import SourceMode
from cdcgen.core.lineage_names import FILE_NAMESPACE as FILE
from cdcgen_dev.spark_cluster import StandaloneCluster

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(1500)]

SOURCE = TableRef("e2e_rboot_shop", "orders")
SINK_KEYSPACE = "e2e_rboot_replica"
SINK = TableRef(SINK_KEYSPACE, "orders")
ROWS = 3_000


@dataclass
class Setup:
    scenario: Scenario
    second: Any  # the sink cluster's handle


def create_orders(client: Any, table: TableRef) -> None:
    from cdcgen_dev.emulator import orders_table
    from cdcgen_dev.emulator.log_schema import base_table_cql

    client.session.execute(f"DROP KEYSPACE IF EXISTS {table.keyspace}", timeout=120)
    client.session.execute(
        f"CREATE KEYSPACE {table.keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}",
        timeout=120,
    )
    client.session.execute(base_table_cql(orders_table(table.keyspace, table.table)), timeout=120)


def fill(client: Any) -> None:
    from cassandra.concurrent import execute_concurrent_with_args

    rng = random.Random(81)
    insert = client.session.prepare(
        f"INSERT INTO {SOURCE.qualified} (pk, ck, v, tags) VALUES (?, ?, ?, ?) "
        "USING TIMESTAMP ? AND TTL ?"
    )
    now_us = int(time.time() * 1_000_000)
    values = [
        (n // 3, n % 3, f"v{n}", {f"t{n % 5}"} if n % 2 else None,
         now_us - rng.randrange(1, 600_000_000), 86_400 if n % 4 == 0 else 0)
        for n in range(ROWS)
    ]  # fmt: skip
    execute_concurrent_with_args(client.session, insert, values, concurrency=64)


def contents(client: Any, table: TableRef) -> list[tuple[Any, ...]]:
    rows = client.session.execute(
        f"SELECT pk, ck, v, tags, WRITETIME(v) FROM {table.qualified}", timeout=60
    )
    return sorted(tuple(r) for r in rows)


@pytest.fixture
def setup(scenario: Callable[[str, SourceMode], Scenario], cassandra_second: Any
          ) -> Iterator[Setup]:  # fmt: skip
    from cdcgen.adapters.checkpoints import CqlCheckpointStore
    from cdcgen.adapters.cql import connect

    scn = scenario("rboot", SourceMode.RAFT)
    with scn.client() as client:
        scn.cluster(client).join_node(SourceMode.RAFT, shards=2, vnodes=4, seed=83)
        create_orders(client, SOURCE)
        fill(client)
        store = CqlCheckpointStore(client, scn.config.checkpoint_keyspace)
        store.ensure_schema()
        now = datetime.now(UTC)
        store.record_start(SOURCE, now - timedelta(hours=1))
        store.save_watermark(SOURCE, now - timedelta(minutes=30))  # before any snapshot
    sink = connect(cassandra_second.contact_points)
    try:
        create_orders(sink, SINK)
    finally:
        sink.close()
    yield Setup(scn, cassandra_second)


def run_replication(setup: Setup, env: dict[str, str] | None = None) -> Any:
    from cdcgen.airflow.connections import SINK_CONN_ID, connection_env, source_connection

    sink = source_connection(
        setup.second.contact_points,
        9042,
        {"sink_keyspace": SINK_KEYSPACE, "replicated_tables": SOURCE.qualified},
    )
    env = {
        **CLUSTER_ENV,
        **connection_env(SINK_CONN_ID, sink),
        "CDCGEN_REPLICATION_COPY_SPLITS": "64",
        **(env or {}),
    }
    summaries = setup.scenario.config.report_dir / "summaries" / "replication"
    return setup.scenario.run_dag("cdc_replication", env=env, summaries=summaries)


def test_a_new_sink_is_bootstrapped_by_a_spark_job_on_a_standalone_cluster(
    setup: Setup, spark_standalone: StandaloneCluster
) -> None:
    from cdcgen.adapters.cql import connect
    from cdcgen.adapters.sink_state import PROGRESS, CqlSinkState

    before = on_cluster(setup.scenario, spark_standalone)
    events = setup.scenario.config.report_dir.parent / "openlineage"
    first, _ = run_replication(setup, lineage_env(events))
    assert_ok(first)
    assert_ran_on(spark_standalone, before, apps=1)  # the copy, on the cluster
    assert "needs no bootstrap" not in first.output
    the_bootstrap_and_the_apply_report_their_lineage(setup, events)

    with setup.scenario.client() as source:
        expected = contents(source, SOURCE)
        keyspace = source.cluster.metadata.keyspaces.get(SINK_KEYSPACE)
        assert keyspace is None or PROGRESS not in keyspace.tables  # nothing on the source
    sink = connect(setup.second.contact_points)
    try:
        assert len(expected) == ROWS and contents(sink, SINK) == expected
        progress = CqlSinkState(sink, SOURCE, SINK).progress()
        assert progress.consistent_until is not None
        assert progress.consistent_until == progress.bootstrapped_at
        assert CqlSinkState(sink, SOURCE, SINK).copy_progress() is None
    finally:
        sink.close()

    again = on_cluster(setup.scenario, spark_standalone)
    with listening() as heard:
        second, summary = run_replication(setup, heard.env(tags=True))
    assert_ok(second)
    the_table_s_metrics_are_its_summary_s(heard, summary)
    assert "needs no bootstrap" in second.output  # skipped: the sink is bootstrapped
    assert_ran_on(spark_standalone, again, apps=0)
    # The grid names each table's tasks by the table, the skipped bootstrap too.
    shown = rendered_map_indexes(setup.scenario.home, "cdc_replication")
    assert shown == {"table.bootstrap": {SOURCE.qualified}, "table.apply": {SOURCE.qualified}}


def the_bootstrap_and_the_apply_report_their_lineage(setup: Setup, folder: Path) -> None:
    """The bootstrap's Spark job read the source base table on the source cluster and
    wrote the sink table on the sink cluster (the namespace of each one's first contact
    point); the apply read the lake's changes table of the source table and wrote the
    same sink table."""
    c = setup.scenario.config
    source = f"cassandra://{c.contact_points[0]}:{c.port}"
    sink = f"cassandra://{setup.second.contact_points[0]}:9042"
    tasks = finished_tasks(folder, "cdc_replication")
    bootstrap, apply = tasks["table.bootstrap"], tasks["table.apply"]
    assert bootstrap.all_inputs() == {(source, SOURCE.qualified)}, bootstrap
    assert bootstrap.all_outputs() == {(sink, SINK.qualified)}, bootstrap
    assert apply.all_inputs() == {(FILE, f"{c.lake_path}/changes/{SOURCE.qualified}")}, apply
    assert apply.all_outputs() == {(sink, SINK.qualified)}, apply
    for quiet in ("plan", "summarize"):
        assert not tasks[quiet].all_inputs() and not tasks[quiet].all_outputs(), quiet


def the_table_s_metrics_are_its_summary_s(heard: Listener, summary: dict[str, Any]) -> None:
    """Tagged by the source connection and the table: what the run applied (nothing new
    since the bootstrap), refused (nothing) and the sink's lag, as the summary says."""
    table = summary["tables"][SOURCE.qualified]
    tags = {"cluster": "cdc_source", "table": SOURCE.qualified}
    applied = heard.one("cdcgen.replication.rows_applied", **tags)
    assert applied.kind == "c" and applied.value == table["applied_log_rows"] == 0
    rejected = heard.one("cdcgen.replication.changes_rejected", **tags)
    assert rejected.kind == "c" and rejected.value == table.get("rejected_count", 0) == 0
    lag = heard.one("cdcgen.replication.sink_lag_seconds", **tags)
    assert lag.kind == "g" and lag.value == table["lag_seconds"] > 0
