"""What the replication tests share: timings, a workload, one changes run, table contents.

Each test module builds its own emulated cluster and lake under its own prefix; these
are the steps they take the same way, and the one comparison rule they apply.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.changes.changes_run import ChangesRequest, extract_changes
from cdcgen.changes.job import table_adapters
from cdcgen.changes.settings import ChangesSettings
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.generation import SourceMode
from cdcgen.core.windows import Interval, Mode
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.schema import SourceSchema
from cdcgen_dev.emulator import SandboxCluster, WorkloadSpec, orders_table
from cdcgen_dev.emulator import run_workload as emulate
from cdcgen_dev.emulator.log_schema import base_table_cql
from cdcgen_dev.emulator.schema_setup import drop_keyspaces
from cdcgen_dev.sandbox import sandbox_config

RING_DELAY = timedelta(milliseconds=500)
LEEWAY = timedelta(milliseconds=800)
CONFIDENCE = timedelta(milliseconds=500)
#: How long after a write its window may be extracted (leeway + confidence window).
CLOSE_SECONDS = (LEEWAY + CONFIDENCE).total_seconds() + 0.2
DDL_TIMEOUT = 120.0
SETTINGS = ChangesSettings(buckets=4, streams_per_task=8, page_size=200, batch_rows=500)
#: A bootstrap's Spark copy of these small tables: a few rows per token range at most.
COPY = ReplicationSettings(copy_splits=32)


def world_config(prefix: str, contact_points: Sequence[str], lake: Path) -> PipelineConfig:
    """A module's settings: its own prefix, state keyspace, lake and short timings."""
    return sandbox_config(
        prefix,
        contact_points=tuple(contact_points),
        source_mode=SourceMode.RAFT,
        target_keyspace=f"{prefix}state",
        lake_path=lake,
        report_dir=lake / "reports",
        generation_leeway=LEEWAY,
        confidence_window=CONFIDENCE,
    )


def fresh_cluster(
    client: CqlClient,
    prefix: str,
    keyspaces: Sequence[str],
    seed: int,
    skew: timedelta = timedelta(0),
    mode: SourceMode = SourceMode.RAFT,
) -> SandboxCluster:
    """An emulated cluster of one node under ``prefix`` (raft unless ``mode`` says
    otherwise), whatever an earlier run of the module left (its prefixed keyspaces and
    ``keyspaces`` dropped first); ``skew``: its node's clock against this process's,
    from the start."""
    schema = SourceSchema(prefix)
    drop_keyspaces(client, schema)
    for keyspace in keyspaces:
        client.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=DDL_TIMEOUT)
    cluster = SandboxCluster(client, schema, ring_delay=RING_DELAY, leeway=LEEWAY)
    now = datetime.now(UTC) + skew  # the node's clock when it joins
    joined = cluster.join_node(mode, shards=2, vnodes=4, seed=seed, now=now)
    if skew:
        cluster.set_clock_skew(joined.node.name, skew)
    return cluster


def create_sink_table(client: CqlClient, sink: TableRef) -> None:
    """An empty table of the workload's ``orders`` definition in a fresh keyspace."""
    client.session.execute(f"DROP KEYSPACE IF EXISTS {sink.keyspace}", timeout=DDL_TIMEOUT)
    client.session.execute(
        f"CREATE KEYSPACE {sink.keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}",
        timeout=DDL_TIMEOUT,
    )
    cql = base_table_cql(orders_table(sink.keyspace, sink.table))
    client.session.execute(cql, timeout=DDL_TIMEOUT)


def workload(
    cluster: SandboxCluster, table: TableRef, seconds: float, seed: int, keys: int = 60
) -> None:
    """Every kind of change the emulator logs, on ``keys`` partitions."""
    spec = WorkloadSpec(
        keyspace=table.keyspace,
        table=table.table,
        rate=150,
        duration=timedelta(seconds=seconds),
        keys=keys,
        seed=seed,
    )
    report = emulate(cluster, spec)
    assert report.writes > 0 and not report.failed, report.to_json()


def settle() -> datetime:
    """A window end just past the last write, once that window may be extracted."""
    end = datetime.now(UTC) + timedelta(milliseconds=5)
    time.sleep(CLOSE_SECONDS)
    return end


def extract(
    spark: Any, config: PipelineConfig, table: TableRef, start: datetime, end: datetime
) -> int:
    """One incremental changes run into the lake, as the Spark job builds it; its rows."""
    client = connect(config.contact_points)
    try:
        built = table_adapters(client, spark, config, SETTINGS, table)
        request = ChangesRequest(table, Interval(start, end), Mode.INCREMENTAL)
        result = extract_changes(
            request, built.ports(validate=False), config, SETTINGS, cdc_ttl=built.log_table.ttl
        )
        assert result.watermark is not None, result
        return result.rows_written
    finally:
        client.close()


def contents(client: CqlClient, table: TableRef) -> list[tuple[Any, ...]]:
    """Every row of an ``orders`` table with its atomic column's write time, sorted."""
    rows = client.session.execute(
        f"SELECT pk, ck, v, tags, WRITETIME(v) FROM {table.qualified}", timeout=60
    )
    return sorted(tuple(r) for r in rows)


def assert_sink_matches(
    source: list[tuple[Any, ...]], sink: list[tuple[Any, ...]], keys: int = 2
) -> None:
    """Row for row with the write times, but for the bootstrap's one known difference.

    A row an ``UPDATE`` created has no row marker on the source, but a bootstrap's copy
    writes one on the sink (CQL cannot tell; :mod:`cdcgen.replication.bootstrap`): once
    every cell of it is deleted, the row is gone from the source and stays, empty, on
    the sink. Nothing else may differ. Rows start with their ``keys`` key columns; the
    rest of an extra row must be null (``None``, or its ``repr``).
    """
    assert source, "the workload wrote nothing"
    extra = [row for row in sink if row not in source]
    assert all(v is None or v == "None" for row in extra for v in row[keys:]), extra
    assert [row for row in sink if row not in extra] == source
