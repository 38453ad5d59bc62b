"""Every column shape, from the emulator's writes through Cassandra into the changes lake.

One emulated cluster runs a short seeded workload on the every-shape table (one column
of each native type, static columns, non-frozen set, map, list and user type, frozen
ones, a tuple; :func:`~cdcgen_dev.emulator.log_schema.every_shape_table`), once without
and once with a TTL, keeping each write. The tests read back:

* the log table's schema and every log row with cassandra-driver, against the rows the
  emulator logged for each kept write (:func:`log_row_values`), column for column, and
  that every shape and operation occurred;
* the lake after a real changes extraction (local Spark): every value against the log
  row the driver reads, user types and tuples as structs field by field, durations,
  blobs byte for byte, collections element for element; the row checks pass;
* a lake table an earlier version wrote (user types, tuples and durations as text)
  keeps them as text through a run, whose row checks pass too.

The base table is written by the same batches as the log (a statement Cassandra refused
would fail its batch: none does); its contents are not compared here.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from cassandra.util import Date, Duration, OrderedMap, SortedSet, Time
from lake_forms import lake_form

from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.delta_tables import stored_schema
from cdcgen.adapters.log_tables import describe_log_table
from cdcgen.changes.changes_run import ChangesRequest, extract_changes
from cdcgen.changes.columns import column_specs, lake_schema
from cdcgen.changes.job import TableAdapters, table_adapters
from cdcgen.changes.layout import read_delta, table_root
from cdcgen.changes.result import ExtractionRun
from cdcgen.changes.settings import ChangesSettings
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import BATCH_SEQ_NO, STREAM_ID, TIME, TableRef
from cdcgen.core.change_batch import PARTITION_COLUMNS
from cdcgen.core.generation import SourceMode
from cdcgen.core.windows import Interval, Mode
from cdcgen.schema import SourceSchema
from cdcgen.spark_runtime.fanout import arrow_struct
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import SandboxCluster, WorkloadSpec, create_cdc_table, run_workload
from cdcgen_dev.emulator.log_rows import log_row_values
from cdcgen_dev.emulator.log_schema import ColumnType, every_shape_table, log_columns
from cdcgen_dev.emulator.schema_setup import drop_keyspaces
from cdcgen_dev.emulator.workload import KeptWrite
from cdcgen_dev.emulator.writes import EVERY_SHAPE_CHANGES, change_shapes
from cdcgen_dev.sandbox import sandbox_config

pytestmark = pytest.mark.integration

PREFIX = "t_shapes_"
KEYSPACE = f"{PREFIX}ks"
TABLE = TableRef(KEYSPACE, "every_shape")
RING_DELAY = timedelta(milliseconds=500)
LEEWAY = timedelta(milliseconds=800)
CONFIDENCE = timedelta(milliseconds=500)
SETTINGS = ChangesSettings(buckets=2, streams_per_task=8, page_size=100, batch_rows=200)


@dataclass
class World:
    client: CqlClient
    contact_points: tuple[str, ...]
    kept: list[KeptWrite]
    start: datetime
    end: datetime

    def config(self, state: str, lake: Path) -> PipelineConfig:
        """Settings of one lake, with a state keyspace of its own (its checkpoints)."""
        return sandbox_config(
            PREFIX,
            contact_points=self.contact_points,
            source_mode=SourceMode.RAFT,
            target_keyspace=f"{PREFIX}{state}",
            lake_path=lake,
            report_dir=lake / "reports",
            generation_leeway=LEEWAY,
            confidence_window=CONFIDENCE,
        )


@pytest.fixture(scope="module")
def world(contact_points: tuple[str, ...]) -> Iterator[World]:
    client = connect(contact_points)
    schema = SourceSchema(PREFIX)
    drop_keyspaces(client, schema)
    for name in ("ks", "structs", "text"):
        client.session.execute(f"DROP KEYSPACE IF EXISTS {PREFIX}{name}", timeout=120)
    cluster = SandboxCluster(client, schema, ring_delay=RING_DELAY, leeway=LEEWAY)
    joined = cluster.join_node(SourceMode.RAFT, shards=2, vnodes=4, seed=21)
    create_cdc_table(cluster, every_shape_table(KEYSPACE))
    # Writes before the first generation operates are refused, as ScyllaDB refuses them.
    while datetime.now(UTC) < joined.generation.timestamp + LEEWAY:
        time.sleep(0.05)
    start = datetime.now(UTC)
    kept: list[KeptWrite] = []
    for seed, ttl in ((31, None), (32, 3600)):
        report = run_workload(
            cluster,
            WorkloadSpec(
                KEYSPACE, TABLE.table, rate=80, duration=timedelta(seconds=3), keys=12,
                seed=seed, base_ttl=ttl, keep_writes=True,
            ),
        )  # fmt: skip
        assert report.writes and not report.failed and not report.rejected, report.to_json()
        kept += report.kept
    end = datetime.now(UTC) + timedelta(milliseconds=5)
    time.sleep((LEEWAY + CONFIDENCE).total_seconds() + 0.2)  # let the windows close
    yield World(client, contact_points, kept, start, end)
    client.close()


@pytest.fixture(scope="module")
def spark() -> Any:
    return job_session(JobKind.CHANGES_EXTRACT, "cdcgen-shapes-tests")


# --- the log, read back with cassandra-driver --------------------------------------------


def read_log(client: CqlClient) -> tuple[dict[tuple[bytes, Any, int], dict[str, Any]], Any]:
    """Every log row by (stream, cdc$time, batch_seq_no), and the columns' driver types."""
    result = client.session.execute(f"SELECT * FROM {TABLE.qualified_log}", timeout=60)
    names = result.column_names
    types = dict(zip(names, result.column_types, strict=True))
    rows = {}
    for values in result:
        row = dict(zip(names, values, strict=True))
        rows[(bytes(row[STREAM_ID]), row[TIME], row[BATCH_SEQ_NO])] = row
    return rows, types


def plain(value: Any) -> Any:
    """A value as the emulator makes it or the driver reads it, in one comparable form:
    collections as frozensets (a map of its pairs), sequences and tuples (user types'
    named tuples too) as tuples, the driver's dates, times and timestamps as Python's."""
    if isinstance(value, Duration):
        return ("duration", value.months, value.days, value.nanoseconds)
    if isinstance(value, Time):
        return value.nanosecond_time
    if isinstance(value, Date):
        return value.date()
    if isinstance(value, datetime):
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, set | frozenset | SortedSet):
        return frozenset(plain(v) for v in value)
    if isinstance(value, dict | OrderedMap):
        return frozenset((plain(k), plain(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return tuple(plain(v) for v in value)
    return value


def test_log_schema_and_rows_read_back_exactly(world: World) -> None:
    spec = every_shape_table(KEYSPACE)
    declared = {name.strip('"'): ColumnType.parse(kind) for name, kind in log_columns(spec)}
    stored = {
        row.column_name: ColumnType.parse(row.type)
        for row in world.client.session.execute(
            "SELECT column_name, type FROM system_schema.columns "
            "WHERE keyspace_name = %s AND table_name = %s",
            (KEYSPACE, spec.log_table),
        )
    }
    assert stored == declared

    # Every shape and operation occurred.
    made = Counter(shape for kept in world.kept for shape in change_shapes(spec, kept.write))
    assert set(made) >= EVERY_SHAPE_CHANGES, EVERY_SHAPE_CHANGES - set(made)

    rows, _ = read_log(world.client)
    expected = {}
    for kept in world.kept:
        for row in log_row_values(spec, kept.write):
            values = {name.strip('"'): value for name, value in row.items()}
            key = (kept.stream, kept.time, values[BATCH_SEQ_NO])
            expected[key] = {**values, STREAM_ID: kept.stream, TIME: kept.time}
    assert set(rows) == set(expected)
    inet = {n for n, kind in declared.items() if kind.name == "inet"}
    for key, row in rows.items():
        for name, value in row.items():
            logged = expected[key].get(name)  # absent: unset, read back as null
            if name in inet and value is not None:
                value, logged = ip_address(value), ip_address(logged)
            assert plain(value) == plain(logged), (key, name, value, logged)
    assert {r["cdc$operation"] for r in rows.values()} == set(range(1, 9))


# --- the lake, after a real extraction ---------------------------------------------------


def extract(
    spark: Any, world: World, config: PipelineConfig
) -> tuple[ExtractionRun, TableAdapters]:
    """One incremental run over the workload's interval, as the Spark job builds it."""
    client = connect(config.contact_points)
    try:
        built = table_adapters(client, spark, config, SETTINGS, TABLE)
        request = ChangesRequest(TABLE, Interval(world.start, world.end), Mode.INCREMENTAL)
        result = extract_changes(
            request, built.ports(validate=False), config, SETTINGS, cdc_ttl=built.log_table.ttl
        )
        assert result.watermark is not None, result
        return result, built
    finally:
        client.close()


def lake_rows(built: TableAdapters) -> dict[tuple[bytes, str, int], dict[str, Any]]:
    rows = read_delta(built.lake.root).to_pylist()
    by_key = {(r[STREAM_ID], r[TIME], r[BATCH_SEQ_NO]): r for r in rows}
    assert len(by_key) == len(rows)
    return by_key


def test_lake_holds_every_value_losslessly(spark: Any, world: World, tmp_path: Path) -> None:
    config = world.config("structs", tmp_path / "lake")
    result, built = extract(spark, world, config)
    checks = built.row_checks.check(result)
    assert checks.passed, checks.summary

    schema = stored_schema(built.lake.root)
    assert schema is not None
    point = pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.float64())])
    address = pa.struct(
        [
            pa.field("street", pa.string()),
            pa.field("number", pa.int32()),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("location", point),
        ]
    )
    pair = pa.struct([pa.field("f0", pa.int32()), pa.field("f1", pa.string())])
    assert schema.field("nf_udt").type == address and schema.field("s_home").type == address
    assert schema.field("f_udt").type == address
    assert schema.field("tup").type == pa.struct([*pair, pa.field("f2", point)])
    assert schema.field("nf_list").type == pa.map_(pa.string(), pair)
    assert schema.field("nf_map").type == pa.map_(pa.string(), address)
    assert schema.field("n_duration").type == pa.struct(
        [
            pa.field("months", pa.int32()),
            pa.field("days", pa.int32()),
            pa.field("nanoseconds", pa.int64()),
        ]
    )
    assert schema.field("n_blob").type == pa.binary()

    log, types = read_log(world.client)
    lake = lake_rows(built)
    assert len(lake) == len(log) == result.rows_written
    filled: Counter[str] = Counter()
    for (stream, stamp, seq), source in log.items():
        row = lake[(stream, str(stamp), seq)]
        for name, value in source.items():
            if name == TIME:
                continue
            assert row[name] == lake_form(types[name], value), (name, row[name], value)
            filled[name] += value is not None
    # Every column held values (so every shape was compared), blobs of a few KB among them;
    # but a list's deleted elements: removing list elements is not emulated.
    unfilled = {name for name in types if not filled[name]} - {TIME}
    assert unfilled == {"cdc$deleted_elements_nf_list"}, filled
    assert max(len(r["n_blob"]) for r in lake.values() if r["n_blob"]) >= 1024


# --- a lake an earlier version wrote ------------------------------------------------------


def test_a_lake_with_text_columns_keeps_writing_text(
    spark: Any, world: World, tmp_path: Path
) -> None:
    """A table created by an earlier version held user types, tuples and durations as
    text: the run keeps them text (a struct would be a Delta schema mismatch)."""
    config = world.config("text", tmp_path / "lake")
    log_table = describe_log_table(
        world.client, TABLE, config.source_schema, SETTINGS.log_partitioner
    )
    metadata = world.client.session.prepare(log_table.window_query()).result_metadata
    names = [column[2] for column in metadata]
    earlier = lake_schema(column_specs(metadata, as_text=names))
    root = table_root(config.lake_path, TABLE)
    empty = spark.createDataFrame([], arrow_struct(earlier))
    empty.write.format("delta").partitionBy(*PARTITION_COLUMNS).save(root.spark_uri)
    assert stored_schema(root) == earlier

    result, built = extract(spark, world, config)
    assert result.rows_written > 0
    assert stored_schema(root) == earlier  # the table's schema did not move
    checks = built.row_checks.check(result)
    assert checks.passed, checks.summary
    log, _ = read_log(world.client)
    lake = lake_rows(built)
    compared = 0
    for (stream, stamp, seq), source in log.items():
        row = lake[(stream, str(stamp), seq)]
        for name in ("nf_udt", "f_udt", "tup", "n_duration"):
            assert row[name] == (None if source[name] is None else str(source[name]))
            compared += source[name] is not None
        addresses = source["nf_map"]
        texts = None if addresses is None else [(k, str(v)) for k, v in addresses.items()]
        assert row["nf_map"] == texts
    assert compared > 0


def test_plain_forms_compare_what_they_should() -> None:
    """The comparison itself: equal forms for equal values, unequal otherwise."""
    assert plain(SortedSet([1, 2])) == plain({2, 1}) and plain([1]) != plain([2])
    assert plain(Date(date(2020, 1, 2))) == date(2020, 1, 2)
    assert plain(datetime(2020, 1, 1)) == plain(datetime(2020, 1, 1, tzinfo=UTC))
    assert plain(Duration(1, 2, 3)) != plain(Duration(1, 2, 4))
