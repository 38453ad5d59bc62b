"""Replication from one cluster into another, through the CLI a user runs.

The other replication tests keep source and sink tables on one cluster, so a mix-up of
the two sessions (state written to the source, rows read from the sink, one session
used for both) would pass unnoticed there. Here they are two genuinely separate
Cassandra clusters - different cluster names, no shared gossip, one driver session
each: the source is an emulated raft cluster's CDC table on the single sandbox node
(127.0.0.1), the sink the same table definition on the second one (127.0.0.2,
``cassandra_second``). As a user would, the test exports the source's ``CDCGEN_*``
settings and ``CDCGEN_SINK_CONTACT_POINTS``, runs ``cdcgen replication bootstrap``,
writes more, extracts the changes into the lake and runs ``cdcgen replication apply``.
The sink then equals the source row for row with equal write times (but for rows the
bootstrap gave a row marker the source never had, left empty by later deletes), and
its state tables exist on the sink cluster only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from replication_world import (
    assert_sink_matches,
    contents,
    create_sink_table,
    extract,
    fresh_cluster,
    settle,
    workload,
    world_config,
)

from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.sink_state import PROGRESS
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import create_cdc_table, orders_table

pytestmark = pytest.mark.integration

PREFIX = "t_repl2c_"
KEYSPACE = f"{PREFIX}ks"
TABLE = TableRef(KEYSPACE, "orders")
SINK = TableRef(f"{PREFIX}sink", "orders")


@dataclass
class TwoClusters:
    """Both clusters' sessions and what the two CLI runs printed."""

    source: CqlClient
    sink: CqlClient
    bootstrap: dict[str, Any]
    apply: dict[str, Any]


def cli_environment(config: PipelineConfig, sink_contact_points: list[str]) -> dict[str, str]:
    """What a user exports: the source's settings, and where the sink cluster is."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("CDCGEN_SINK_")}
    return {
        **inherited,
        **config.to_env(),
        "CDCGEN_SINK_CONTACT_POINTS": ",".join(sink_contact_points),
        "CDCGEN_SINK_PORT": "9042",
    }


def replication(env: dict[str, str], command: str, run_id: str) -> dict[str, Any]:
    """``cdcgen replication <command>`` in a process of its own; its JSON line."""
    cli = str(Path(sys.executable).parent / "cdcgen")
    args = [cli, "replication", command, "--table", TABLE.qualified,
            "--sink-table", SINK.qualified, "--run-id", run_id]  # fmt: skip
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    record: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return record


@pytest.fixture(scope="module")
def two_clusters(
    contact_points: tuple[str, ...],
    cassandra_second: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[TwoClusters]:
    lake = tmp_path_factory.mktemp("two-cluster-lake")
    source = connect(contact_points)
    sink = connect(cassandra_second.contact_points)
    try:
        cluster = fresh_cluster(source, PREFIX, [KEYSPACE, f"{PREFIX}state", SINK.keyspace], 51)
        create_sink_table(sink, SINK)
        config = world_config(PREFIX, contact_points, lake)
        env = cli_environment(config, cassandra_second.contact_points)
        create_cdc_table(cluster, orders_table(KEYSPACE))
        spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-replication-tests")
        start = datetime.now(UTC)
        workload(cluster, TABLE, 2.0, seed=61)
        middle = settle()
        assert extract(spark, config, TABLE, start, middle) > 0
        bootstrapped = replication(env, "bootstrap", "two-clusters-bootstrap")
        workload(cluster, TABLE, 2.0, seed=62)  # changes only the apply can bring over
        end = settle()
        assert extract(spark, config, TABLE, middle, end) > 0
        applied = replication(env, "apply", "two-clusters-apply")
        yield TwoClusters(source, sink, bootstrapped, applied)
    finally:
        source.close()
        sink.close()


def has_table(client: CqlClient, table: TableRef) -> bool:
    row = client.session.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
        (table.keyspace, table.table),
    ).one()
    return row is not None


def test_the_two_clusters_are_separate(two_clusters: TwoClusters) -> None:
    """Different cluster names and no peers: nothing can reach one through the other."""
    names = {
        str(client.session.execute("SELECT cluster_name FROM system.local").one().cluster_name)
        for client in (two_clusters.source, two_clusters.sink)
    }
    assert len(names) == 2, names
    for client in (two_clusters.source, two_clusters.sink):
        assert not list(client.session.execute("SELECT peer FROM system.peers_v2"))


def test_the_apply_brought_changes_from_the_lake(two_clusters: TwoClusters) -> None:
    bootstrapped, applied = two_clusters.bootstrap, two_clusters.apply
    assert bootstrapped["status"] == "ok" and bootstrapped["copied_rows"] > 0, bootstrapped
    assert applied["status"] == "ok" and applied["applied_log_rows"] > 0, applied
    assert applied["sink_table"] == SINK.qualified
    assert applied["consistent_until"] > bootstrapped["consistent_until"]


def test_the_sink_cluster_equals_the_source_cluster(two_clusters: TwoClusters) -> None:
    assert_sink_matches(contents(two_clusters.source, TABLE), contents(two_clusters.sink, SINK))


def test_the_sink_state_lives_on_the_sink_cluster_only(two_clusters: TwoClusters) -> None:
    state = TableRef(SINK.keyspace, PROGRESS)
    assert has_table(two_clusters.sink, state)
    assert not has_table(two_clusters.source, state)
    assert not has_table(two_clusters.source, SINK)
    row = two_clusters.sink.session.execute(
        f"SELECT consistent_until FROM {state.qualified} "
        "WHERE source_keyspace = %s AND source_table = %s AND sink_table = %s",
        (TABLE.keyspace, TABLE.table, SINK.qualified),
    ).one()
    assert row is not None and row.consistent_until is not None
