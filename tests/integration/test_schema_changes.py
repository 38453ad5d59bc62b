"""Schema changes of a CDC table while the changes pipeline runs, on the real Cassandra.

The emulator ALTERs a base table and its log as ScyllaDB does
(:mod:`cdcgen_dev.emulator.schema_changes`): the log gains an added column with its
``cdc$deleted_`` (and ``cdc$deleted_elements_``) columns and loses a dropped one's; new
CDC options re-derive the log's options. Between changes runs, two columns are added (one
a collection), then one is dropped and the CDC options change: no run fails, every log
row is in the lake exactly once with the new columns' values, a dropped column stays in
the lake and is null in the rows logged after the drop, and the row checks pass on every
run. A sink the runs replicate to gets the added columns and keeps the dropped one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from replication_world import (
    DDL_TIMEOUT,
    SETTINGS,
    assert_sink_matches,
    create_sink_table,
    fresh_cluster,
    settle,
    world_config,
)

from cdcgen.adapters.cdc_tables import CdcCatalog
from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.sink_state import CqlSinkState
from cdcgen.changes.changes_run import ChangesRequest, extract_changes
from cdcgen.changes.job import table_adapters
from cdcgen.changes.layout import delta_dataset, table_root
from cdcgen.changes.result import ExtractionRun
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_extension import CDC_EXTENSION, decode_cdc_extension
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.windows import Interval, Mode
from cdcgen.replication.cql_ports import cql_ports
from cdcgen.replication.errors import SinkSchemaError
from cdcgen.replication.replication_run import Mode as ReplicationMode
from cdcgen.replication.replication_run import (
    Replication,
    ReplicationRequest,
    bootstrap_sink,
    replicate,
)
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.schema import Table
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import (
    Column,
    SandboxCluster,
    WorkloadSpec,
    create_cdc_table,
    orders_table,
    run_workload,
)
from cdcgen_dev.emulator.log_schema import base_table_cql
from cdcgen_dev.emulator.schema_changes import (
    AddColumn,
    CdcOptions,
    DropColumn,
    alter_cdc_table,
)

pytestmark = pytest.mark.integration

PREFIX = "t_schemachg_"
KEYSPACE = f"{PREFIX}ks"
TABLE = TableRef(KEYSPACE, "orders")
ALTERED = TableRef(KEYSPACE, "altered")
SINK = TableRef(f"{PREFIX}sink", "orders")
#: A sink whose runs do not add columns: refused by name once the source has more.
MANUAL_SINK = TableRef(f"{PREFIX}sink", "orders_manual")
KEY = ('"cdc$stream_id"', '"cdc$time"', '"cdc$batch_seq_no"')

Key = tuple[str, str, int]


@dataclass
class World:
    client: CqlClient
    cluster: SandboxCluster
    config: PipelineConfig


@pytest.fixture(scope="module")
def world(contact_points: tuple[str, ...], tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[World]:  # fmt: skip
    lake = tmp_path_factory.mktemp("schema-changes-lake")
    client = connect(contact_points)
    keyspaces = [KEYSPACE, SINK.keyspace, f"{PREFIX}state"]
    cluster = fresh_cluster(client, PREFIX, keyspaces, seed=91)
    for table in (TABLE, ALTERED):
        create_cdc_table(cluster, orders_table(KEYSPACE, table.table))
    create_sink_table(client, SINK)
    client.session.execute(
        base_table_cql(orders_table(MANUAL_SINK.keyspace, MANUAL_SINK.table)), timeout=DDL_TIMEOUT
    )
    try:
        yield World(client, cluster, world_config(PREFIX, contact_points, lake))
    finally:
        client.close()


def log_columns(client: CqlClient, table: TableRef) -> dict[str, str]:
    """The live log table's columns and CQL types, as the driver reads the schema."""
    client.cluster.refresh_table_metadata(table.keyspace, table.log_table)
    columns = client.cluster.metadata.keyspaces[table.keyspace].tables[table.log_table].columns
    return {name: str(c.cql_type).replace(" ", "") for name, c in columns.items()}


def test_alter_changes_the_log_as_scylladb_does(world: World) -> None:
    before = log_columns(world.client, ALTERED)
    for column in (
        Column("note", "text"),
        Column("s_note", "text", static=True),
        Column("labels", "map<text, int>"),
        Column("history", "list<int>"),
    ):
        alter_cdc_table(world.cluster, KEYSPACE, ALTERED.table, AddColumn(column))
    after = log_columns(world.client, ALTERED)
    assert {k: v for k, v in after.items() if k not in before} == {
        "note": "text",
        "cdc$deleted_note": "boolean",
        "s_note": "text",
        "cdc$deleted_s_note": "boolean",
        "labels": "frozen<map<text,int>>",
        "cdc$deleted_labels": "boolean",
        "cdc$deleted_elements_labels": "frozen<set<text>>",
        "history": "frozen<map<timeuuid,int>>",
        "cdc$deleted_history": "boolean",
        "cdc$deleted_elements_history": "frozen<set<timeuuid>>",
    }
    meta = world.client.cluster.metadata.keyspaces[KEYSPACE].tables[ALTERED.table]
    assert meta.columns["s_note"].is_static and str(meta.columns["labels"].cql_type) == (
        "map<text, int>"
    )
    # A repeated call changes nothing; a DROP takes the column's log columns away.
    alter_cdc_table(world.cluster, KEYSPACE, ALTERED.table, AddColumn(Column("note", "text")))
    assert log_columns(world.client, ALTERED) == after
    alter_cdc_table(world.cluster, KEYSPACE, ALTERED.table, DropColumn("labels"))
    alter_cdc_table(world.cluster, KEYSPACE, ALTERED.table, DropColumn("labels"))
    dropped = {"labels", "cdc$deleted_labels", "cdc$deleted_elements_labels"}
    assert log_columns(world.client, ALTERED) == {
        k: v for k, v in after.items() if k not in dropped
    }
    # New CDC options: the log's TWCS window and gc_grace follow the TTL; the options
    # are the base table's cdc extension, which the pipeline reads.
    alter_cdc_table(world.cluster, KEYSPACE, ALTERED.table, CdcOptions(ttl=600, preimage=True))
    world.client.cluster.refresh_table_metadata(KEYSPACE, ALTERED.log_table)
    log_meta = world.client.cluster.metadata.keyspaces[KEYSPACE].tables[ALTERED.log_table]
    assert log_meta.options["gc_grace_seconds"] == 0
    assert log_meta.options["compaction"]["compaction_window_size"] == "1"
    catalog = CdcCatalog(world.client, world.cluster.schema)
    assert catalog.ttl(ALTERED) is not None and catalog.ttl(ALTERED).total_seconds() == 600
    row = world.client.session.execute(
        f"SELECT extensions FROM {world.cluster.schema.name(Table.TABLES)} "
        "WHERE keyspace_name = %s AND table_name = %s",
        (KEYSPACE, ALTERED.table),
    ).one()
    options = decode_cdc_extension(row.extensions[CDC_EXTENSION])
    assert (options["ttl"], options["preimage"], options["postimage"]) == ("600", "true", "false")
    # The workload's later writes use the new columns, with the new TTL.
    run_workload(world.cluster, WorkloadSpec(KEYSPACE, ALTERED.table, rate=100,
                 duration=timedelta(seconds=1), keys=20, seed=3))  # fmt: skip
    rows = world.client.session.execute(
        f'SELECT note, history, TTL("cdc$operation") FROM {KEYSPACE}.{ALTERED.log_table}'
    ).all()
    assert any(r.note is not None for r in rows) and any(r.history for r in rows)
    assert all(r[2] is None or r[2] <= 600 for r in rows)


def source_rows(client: CqlClient, columns: tuple[str, ...]) -> dict[Key, dict[str, Any]]:
    """Ground truth by a full scan of the log (only a test does that): key -> values."""
    rows = client.session.execute(
        f"SELECT {', '.join((*KEY, *columns))} FROM {KEYSPACE}.{TABLE.log_table}", timeout=60
    )
    return {
        (bytes(r[0]).hex(), str(r[1]), r[2]): dict(zip(columns, r[3:], strict=True)) for r in rows
    }


def extract(spark: Any, world: World, start: datetime, end: datetime) -> ExtractionRun:
    """One incremental run as the Spark job builds it, then its row checks (all pass)."""
    client = connect(world.config.contact_points)
    try:
        built = table_adapters(client, spark, world.config, SETTINGS, TABLE)
        request = ChangesRequest(TABLE, Interval(start, end), Mode.INCREMENTAL)
        result = extract_changes(
            request, built.ports(validate=False), world.config, SETTINGS,
            cdc_ttl=built.log_table.ttl,
        )  # fmt: skip
        assert result.plan.pending == () and result.watermark == result.interval.end, result
        checks = built.row_checks.check(result)
        assert checks.passed, checks.summary
        return result
    finally:
        client.close()


def lake_rows(world: World) -> list[dict[str, Any]]:
    root = table_root(world.config.lake_path, TABLE)
    return list(delta_dataset(root).to_table().to_pylist())


def _value(value: Any) -> Any:
    """A lake or driver value in one comparable form (a map as a dict)."""
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return dict(value)
    if value is not None and hasattr(value, "items"):
        return dict(value.items())
    return value


def workload(world: World, seed: int) -> None:
    spec = WorkloadSpec(KEYSPACE, TABLE.table, rate=150, duration=timedelta(seconds=1.5), keys=40,
                        seed=seed)  # fmt: skip
    report = run_workload(world.cluster, spec)
    assert report.writes and not report.failed, report.to_json()


def contents(client: CqlClient, table: TableRef) -> list[tuple[Any, ...]]:
    """Every row of the table with its atomic column's write time, sorted."""
    rows = client.session.execute(
        f"SELECT pk, ck, v, tags, labels, WRITETIME(v) FROM {table.qualified}", timeout=60
    )
    return sorted(tuple(r) for r in rows)


def table_columns(client: CqlClient, table: TableRef) -> set[str]:
    client.cluster.refresh_table_metadata(table.keyspace, table.table)
    return set(client.cluster.metadata.keyspaces[table.keyspace].tables[table.table].columns)


def test_the_lake_and_the_sink_follow_the_log_through_add_and_drop(world: World) -> None:
    """The lake: every log row once, the added columns' values, the dropped one null
    after the drop, new CDC options read by the next run. The sink: given the added
    columns by the run (``ALTER TABLE ADD``), keeps the dropped one, and equals the
    source; a sink whose runs add no column is refused by name before anything is
    applied."""
    spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-schema-changes-tests")
    start = datetime.now(UTC)
    workload(world, seed=1)
    first_end = extract(spark, world, start, settle()).interval.end
    truth = source_rows(world.client, ("v",))
    job, manual = Replication(TABLE, SINK), Replication(TABLE, MANUAL_SINK)
    ports = cql_ports(world.config, world.client, world.client)
    for each in (job, manual):
        bootstrap_sink(
            world.config, ports, ReplicationRequest(each, "bootstrap", ReplicationMode.BOOTSTRAP)
        )

    for column in (Column("note", "text"), Column("labels", "map<text, int>")):
        alter_cdc_table(world.cluster, KEYSPACE, TABLE.table, AddColumn(column))
    workload(world, seed=2)
    second_end = extract(spark, world, first_end, settle()).interval.end
    added = source_rows(world.client, ("v", "note", "labels"))
    assert any(values["labels"] for values in added.values())
    record = replicate(world.config, ports, ReplicationRequest(job, "apply-added"))
    assert record.status == "ok" and not record.rejected, record
    assert {"note", "labels"} <= table_columns(world.client, SINK)
    refused = CqlSinkState(world.client, TABLE, MANUAL_SINK).progress()
    without = ReplicationSettings().with_overrides(add_columns=False)
    refusing = cql_ports(world.config, world.client, world.client, without)
    with pytest.raises(SinkSchemaError, match=r"has no column\(s\) labels, note of the source"):
        replicate(world.config, refusing, ReplicationRequest(manual, "refused"))
    assert CqlSinkState(world.client, TABLE, MANUAL_SINK).progress() == refused

    alter_cdc_table(world.cluster, KEYSPACE, TABLE.table, DropColumn("note"))
    # New CDC options change no column: the next run reads the new TTL and goes on.
    alter_cdc_table(world.cluster, KEYSPACE, TABLE.table, CdcOptions(ttl=7200, postimage=True))
    workload(world, seed=3)
    extract(spark, world, second_end, settle())
    final = source_rows(world.client, ("v", "labels"))
    ttl = CdcCatalog(world.client, world.cluster.schema).ttl(TABLE)
    assert ttl is not None and ttl.total_seconds() == 7200

    rows = lake_rows(world)
    keys = [(r["cdc$stream_id"].hex(), r["cdc$time"], r["cdc$batch_seq_no"]) for r in rows]
    assert [k for k, n in Counter(keys).items() if n > 1] == []
    assert set(keys) == set(final)
    by_key = dict(zip(keys, rows, strict=True))
    # Rows logged before the ALTER have no value of the added columns.
    for key in truth:
        assert by_key[key]["note"] is None and by_key[key]["labels"] is None
    # Rows logged while ``note`` existed hold its values; later ones hold none.
    for key, values in added.items():
        for name in ("v", "note", "labels"):
            assert _value(by_key[key][name]) == _value(values[name]), (key, name)
    after_drop = set(final) - set(added)
    assert after_drop
    for key in after_drop:
        assert by_key[key]["note"] is None
        for name in ("v", "labels"):
            assert _value(by_key[key][name]) == _value(final[key][name]), (key, name)
    assert any(by_key[key]["labels"] for key in after_drop)

    # The sink keeps the dropped column and equals the source in every other.
    record = replicate(world.config, ports, ReplicationRequest(job, "apply-dropped"))
    assert record.status == "ok" and not record.rejected, record
    world.client.cluster.refresh_table_metadata(SINK.keyspace, SINK.table)
    assert (
        "note" in world.client.cluster.metadata.keyspaces[SINK.keyspace].tables[SINK.table].columns
    )
    assert_sink_matches(contents(world.client, TABLE), contents(world.client, SINK), keys=2)
