"""Changes extraction against a real Cassandra, fed by the sandbox emulator's workload.

One emulated cluster (two generations: the workload crosses the switch) writes CDC log
rows; the tests extract them with the pipeline's own adapters (raft generation source,
sandbox clocks, the CQL checkpoint store, the Parquet lake on Spark), built as the Spark
job builds them (:func:`cdcgen.changes.job.table_adapters`), and compare with a full
scan of the log table, which only a test may do:

* every row is in the lake exactly once, in per-key order, over two incremental runs;
  a re-run is a no-op, a backfill replaces exactly, the row checks pass, the watermark
  is the interval end, and a window past the TTL fails with re-bootstrap advice;
* a run killed inside a Spark task (its reader factory wrapped to die after a stream)
  and another killed between jobs (its checkpoint store wrapped to die after two saves)
  both resume from their checkpoints with nothing lost or duplicated;
* rows the workload misroutes fail the colocation check, each named in the report;
* a CDC TTL raised after a run, then a run past the old TTL: the rows logged under it
  are gone from the log, and the run fails naming that TTL rather than skip them.

Spark runs locally on two cores with one shared session for the module.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from changes_fakes import (
    CheckpointsFailingAfter,
    InjectedFault,
    ReadersFailingAfter,
    ship_to_spark_workers,
)
from deltalake import DeltaTable

from cdcgen.adapters import delta_tables
from cdcgen.adapters.cdc_tables import CdcCatalog
from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.generation_sources import source_for
from cdcgen.adapters.lake_store import LakeLocation, LakeRoot
from cdcgen.adapters.log_tables import describe_log_table
from cdcgen.changes.changes_lake import DeltaChangesLake
from cdcgen.changes.changes_run import ChangesRequest, extract_changes, run_changes
from cdcgen.changes.job import TableAdapters, reader_factory, table_adapters
from cdcgen.changes.layout import STATS_COLUMNS, read_delta, table_root
from cdcgen.changes.report import changes_report, record_changes_run
from cdcgen.changes.result import ExtractionRun
from cdcgen.changes.settings import ChangesSettings
from cdcgen.changes.verdicts import row_checks
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import LogPartitioner, TableRef
from cdcgen.core.errors import DataExpired
from cdcgen.core.generation import SourceMode
from cdcgen.core.log_ttls import LogTtls
from cdcgen.core.watermark import BucketCheckpoint
from cdcgen.core.windows import Interval, Mode, WindowKind
from cdcgen.schema import SourceSchema
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen.validation.errors import ChangesInvalid
from cdcgen.validation.results import SUMMARY_ROWS
from cdcgen_dev.emulator import (
    SandboxCluster,
    WorkloadSpec,
    create_cdc_table,
    orders_table,
    run_workload,
)
from cdcgen_dev.emulator.schema_changes import CdcOptions, alter_cdc_table
from cdcgen_dev.emulator.schema_setup import drop_keyspaces
from cdcgen_dev.sandbox import sandbox_config

pytestmark = pytest.mark.integration

PREFIX = "t_changes_"
KEYSPACE = f"{PREFIX}ks"
RING_DELAY = timedelta(milliseconds=500)
LEEWAY = timedelta(milliseconds=800)
CONFIDENCE = timedelta(milliseconds=500)
SETTINGS = ChangesSettings(buckets=4, streams_per_task=8, page_size=200, batch_rows=500)

Key = tuple[str, str, int]  # (stream hex, cdc$time, batch_seq_no)


@dataclass
class World:
    """The emulated cluster, its tables and when their writes happened."""

    client: CqlClient
    cluster: SandboxCluster
    contact_points: tuple[str, ...]
    start: datetime
    end: datetime
    misrouted_writes: int

    def config(self, target: str, lake: LakeRoot, reports: Path | None = None) -> PipelineConfig:
        return sandbox_config(
            PREFIX,
            contact_points=self.contact_points,
            source_mode=SourceMode.RAFT,
            target_keyspace=f"{PREFIX}{target}",
            lake_path=lake,
            report_dir=reports or Path(lake) / "reports",
            generation_leeway=LEEWAY,
            confidence_window=CONFIDENCE,
        )


@pytest.fixture(scope="module")
def spark(s3_server: Any) -> Any:  # its JVM inherits the S3 server's AWS_* environment
    ship_to_spark_workers()  # the fault wrappers run inside Spark tasks
    return job_session(JobKind.CHANGES_EXTRACT, "cdcgen-changes-tests")


@pytest.fixture(scope="module")
def world(contact_points: tuple[str, ...]) -> Iterator[World]:
    client = connect(contact_points)
    schema = SourceSchema(PREFIX)
    drop_keyspaces(client, schema)
    for name in (
        "ks", "t_main", "t_kill_local", "t_kill_s3", "t_bad", "t_state", "old_state", "t_ttl"
    ):  # fmt: skip
        client.session.execute(f"DROP KEYSPACE IF EXISTS {PREFIX}{name}", timeout=120)
    cluster = SandboxCluster(client, schema, ring_delay=RING_DELAY, leeway=LEEWAY)
    cluster.join_node(SourceMode.RAFT, shards=3, vnodes=4, seed=11)
    create_cdc_table(cluster, orders_table(KEYSPACE))
    create_cdc_table(cluster, orders_table(KEYSPACE, table="orders_bad"))
    start = datetime.now(UTC)
    # The second node's generation starts ~2 s from now: the workload crosses the switch.
    cluster.join_node(SourceMode.RAFT, shards=2, vnodes=4, seed=12)
    run_workload(
        cluster,
        WorkloadSpec(keyspace=KEYSPACE, rate=250, duration=timedelta(seconds=4), keys=150, seed=5),
    )
    bad = run_workload(
        cluster,
        WorkloadSpec(
            keyspace=KEYSPACE,
            table="orders_bad",
            rate=100,
            duration=timedelta(seconds=1),
            keys=50,
            seed=6,
            misroute_fraction=0.05,
        ),
    )
    end = datetime.now(UTC) + timedelta(milliseconds=5)
    time.sleep((LEEWAY + CONFIDENCE).total_seconds() + 0.2)  # let the windows close
    yield World(client, cluster, contact_points, start, end, bad.misrouted)
    client.close()


def adapters(
    spark: Any,
    world: World,
    config: PipelineConfig,
    table: str = "orders",
    settings: ChangesSettings = SETTINGS,
    *,
    task_dies_after_streams: int | None = None,
) -> TableAdapters:
    """The table's adapters as the Spark job builds them; optionally, every read task's
    reader dies after that many streams (a killed Python worker)."""
    ref = TableRef(KEYSPACE, table)
    readers = None
    if task_dies_after_streams is not None:
        log_table = describe_log_table(
            world.client, ref, config.source_schema, settings.log_partitioner
        )
        readers = ReadersFailingAfter(
            reader_factory(config, settings, log_table), task_dies_after_streams
        )
    return table_adapters(world.client, spark, config, settings, ref, readers=readers)


def run(
    spark: Any,
    world: World,
    config: PipelineConfig,
    interval: Interval,
    table: str = "orders",
    settings: ChangesSettings = SETTINGS,
    *,
    mode: Mode = Mode.INCREMENTAL,
    run_id: str = "",
    now: datetime | None = None,
    task_dies_after_streams: int | None = None,
    driver_dies_after_saves: int | None = None,
) -> ExtractionRun:
    """Extract ``table``'s closed windows for ``interval`` (no row checks: tests run
    them themselves); optionally the driver dies after that many checkpointed jobs."""
    built = adapters(
        spark, world, config, table, settings, task_dies_after_streams=task_dies_after_streams
    )
    ports = built.ports(validate=False)
    if driver_dies_after_saves is not None:
        ports = replace(
            ports, checkpoints=CheckpointsFailingAfter(ports.checkpoints, driver_dies_after_saves)
        )
    request = ChangesRequest(TableRef(KEYSPACE, table), interval, mode, run_id=run_id)
    return extract_changes(request, ports, config, settings, cdc_ttl=built.log_table.ttl, now=now)


def source_rows(world: World, table: str = "orders") -> dict[Key, tuple[int, int]]:
    """Ground truth, by a full scan (never done by the pipeline): key -> (pk, scan position)."""
    rows = world.client.session.execute(
        f'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no", pk '
        f"FROM {KEYSPACE}.{table}_scylla_cdc_log",
        timeout=60,
    )
    return {(bytes(r[0]).hex(), str(r[1]), r[2]): (r[3], i) for i, r in enumerate(rows)}


def lake_rows(config: PipelineConfig, table: str = "orders") -> list[dict[str, Any]]:
    """Every lake row, file by file in file order (the order a reader sees)."""
    root = table_root(config.lake_path, TableRef(KEYSPACE, table))
    rows = []
    files = delta_tables.committed_files(root) if delta_tables.is_delta(root) else []
    for file in files:
        columns = ["cdc$stream_id", "cdc$time", "cdc$batch_seq_no", "pk", "write_time"]
        filesystem, path = file.arrow()
        for row in pq.read_table(path, columns=columns, filesystem=filesystem).to_pylist():
            row["file"] = file.uri
            rows.append(row)
    return rows


def key_of(row: dict[str, Any]) -> Key:
    return (row["cdc$stream_id"].hex(), row["cdc$time"], row["cdc$batch_seq_no"])


def assert_exactly_once_in_key_order(config: PipelineConfig, truth: dict[Key, Any]) -> None:
    rows = lake_rows(config)
    counts = Counter(key_of(r) for r in rows)
    assert [k for k, n in counts.items() if n > 1] == []
    assert set(counts) == set(truth), (
        f"missing {len(set(truth) - set(counts))}, unexpected {len(set(counts) - set(truth))}"
    )
    # Per key: the lake's order (file by file) agrees with the source's clustering order.
    by_key_file: dict[tuple[int, str], list[Key]] = defaultdict(list)
    for row in rows:
        by_key_file[(row["pk"], row["file"])].append(key_of(row))
    for keys in by_key_file.values():
        assert keys == sorted(keys, key=lambda k: truth[k][1])
    by_key: dict[int, list[tuple[Any, int]]] = defaultdict(list)
    for row in rows:
        by_key[row["pk"]].append((row["write_time"], row["cdc$batch_seq_no"]))
    for changes in by_key.values():  # (write_time, batch_seq_no) orders each key's changes
        assert len(set(changes)) == len(changes)


def test_every_row_lands_once_in_key_order_and_reruns_are_idempotent(
    spark: Any, world: World, tmp_path: Path
) -> None:
    config = world.config("t_main", tmp_path)
    truth = source_rows(world)
    assert len(truth) > 500
    middle = world.start + (world.end - world.start) / 2
    first = run(spark, world, config, Interval(world.start, middle), run_id="r1")
    second = run(spark, world, config, Interval(middle, world.end), run_id="r2")
    assert first.plan.pending == () and second.plan.pending == ()
    labels = {w.generation.label for w in (*first.windows, *second.windows)}
    assert len(labels) == 2  # the workload crossed the generation switch
    assert first.rows_written + second.rows_written == len(truth)
    assert_exactly_once_in_key_order(config, truth)

    # The watermark: everything up to the interval end, readable by users.
    store = CqlCheckpointStore(world.client, config.target_keyspace)
    progress = store.progress(TableRef(KEYSPACE, "orders"))
    assert progress.watermark == second.interval.end == second.watermark
    assert progress.started_at == first.interval.start
    # ... with the lake version that holds it; each checkpoint names its own commit.
    assert progress.lake_version == second.lake_version
    committed = {*first.lake_versions, *second.lake_versions}
    saved = store.checkpoints(TableRef(KEYSPACE, "orders"))
    assert saved and {c.lake_version for c in saved} <= committed

    # Row checks on the second run (both generations): all pass, Data Docs written.
    built = adapters(spark, world, config)
    assert built.log_table.partitioner is LogPartitioner.MURMUR3  # Apache Cassandra hashes
    checks = built.row_checks.check(second)
    assert checks.passed, checks.summary
    assert {c.check for c in checks.checks} >= {
        "change in its key's stream (colocation)",
        "row count equals the source's",
        "batches complete",
        "no duplicate changes",
    }
    assert checks.report_index.is_file()
    outcome = second.outcome().checked(row_checks(checks))
    page = record_changes_run(config.report_dir, outcome, checks)
    assert page.is_file()

    # Re-running an interval is a no-op; a backfill replaces exactly its windows.
    again = run(spark, world, config, Interval(middle, world.end), run_id="r2-retry")
    assert again.windows == () and again.jobs == 0
    backfill = run(
        spark, world, config, Interval(world.start, middle), run_id="b1", mode=Mode.BACKFILL
    )
    assert backfill.windows and {w.kind for w in backfill.windows} <= {
        WindowKind.REPLACE,
        WindowKind.NEW,
    }
    assert_exactly_once_in_key_order(config, truth)
    assert store.progress(TableRef(KEYSPACE, "orders")).watermark == second.interval.end

    # Every job is one commit; the table keeps each run's version for time travel.
    versions = [*first.lake_versions, *second.lake_versions, *backfill.lake_versions]
    assert versions == sorted(set(versions)) and len(versions) == sum(
        r.jobs for r in (first, second, backfill)
    )
    before = built.lake.dataset(first.lake_version).count()
    assert before == first.rows_written  # as of the first run: its rows only
    # A reader without Spark (delta-rs) reads exactly the rows Spark reads.
    assert_delta_rs_reads_what_spark_reads(built.lake)
    # The table keeps file statistics on the write time only.
    properties = DeltaTable(str(built.lake.root)).metadata().configuration
    assert properties["delta.dataSkippingStatsColumns"] == STATS_COLUMNS
    adds = DeltaTable(str(built.lake.root)).get_add_actions(flatten=True)
    minimums = {c.removeprefix("min.") for c in adds.column_names if c.startswith("min.")}
    assert minimums == {"write_time"}

    # A window older than the CDC TTL fails loudly, with what to do.
    with pytest.raises(DataExpired, match="Re-bootstrap"):
        run(spark, world, config, Interval(world.end, world.end + timedelta(seconds=1)),
            now=world.end + timedelta(days=2))  # fmt: skip


def assert_delta_rs_reads_what_spark_reads(lake: DeltaChangesLake) -> None:
    def rows(table: pa.Table) -> list[tuple[Any, ...]]:
        columns = sorted(table.column_names)
        return sorted(zip(*(table.column(c).to_pylist() for c in columns), strict=True), key=repr)

    by_spark = lake.dataset().toArrow()
    by_delta_rs = read_delta(lake.root)
    assert sorted(by_spark.column_names) == sorted(by_delta_rs.column_names)
    assert by_spark.num_rows > 0
    assert rows(by_delta_rs) == rows(by_spark)


def test_killed_runs_resume_from_checkpoints_without_loss_or_duplicates(
    spark: Any, world: World, lake_root: LakeLocation, tmp_path: Path
) -> None:
    """On a local lake and on S3: the same kills, the same guarantees."""
    where = "local" if lake_root.is_local else "s3"
    config = world.config(f"t_kill_{where}", lake_root, tmp_path / "reports")
    truth = source_rows(world)
    interval = Interval(world.start, world.end)
    per_job = SETTINGS.with_overrides(buckets_per_job=1)

    # Killed inside a read task: the Spark job fails, nothing of it is acknowledged.
    with pytest.raises(Exception, match="injected fault"):
        run(spark, world, config, interval, task_dies_after_streams=1)
    store = CqlCheckpointStore(world.client, config.target_keyspace)
    table = TableRef(KEYSPACE, "orders")
    assert store.checkpoints(table) == []

    # Killed on the driver after two buckets were written and checkpointed.
    with pytest.raises(InjectedFault):
        run(spark, world, config, interval, settings=per_job, driver_dies_after_saves=2)
    done = {(c.generation, c.bucket) for c in store.checkpoints(table)}
    assert done

    # No checkpoint is ahead of the lake: each names a commit the table has, and that
    # version already holds its bucket's rows.
    lake = adapters(spark, world, config).lake
    for checkpoint in store.checkpoints(table):
        assert checkpoint.lake_version is not None
        assert checkpoint.lake_version <= (lake.version() or 0)
        held = lake.dataset(checkpoint.lake_version).where(f"bucket = {checkpoint.bucket}")
        assert held.count() > 0

    resumed = run(spark, world, config, interval, settings=per_job, run_id="resume")
    read = {(w.generation.start, w.bucket) for w in resumed.windows}
    assert read and not (read & done)  # acknowledged buckets are not read again
    assert_exactly_once_in_key_order(config, truth)
    assert store.progress(table).watermark == interval.end

    # A backfill killed before its commit: the table stays at its version, whole, and
    # the checkpoints do not move; the re-run commits the same content.
    version, saved = lake.version(), store.checkpoints(table)
    with pytest.raises(Exception, match="injected fault"):
        run(spark, world, config, interval, mode=Mode.BACKFILL, task_dies_after_streams=1)
    assert lake.version() == version
    assert_exactly_once_in_key_order(config, truth)
    backfill = run(spark, world, config, interval, mode=Mode.BACKFILL, run_id="backfill")
    assert backfill.rows_written == len(truth) and backfill.lake_versions
    assert_exactly_once_in_key_order(config, truth)
    assert store.checkpoints(table) == saved
    assert_delta_rs_reads_what_spark_reads(lake)


def test_misrouted_rows_fail_colocation_and_are_named(
    spark: Any, world: World, tmp_path: Path
) -> None:
    assert world.misrouted_writes > 0
    config = world.config("t_bad", tmp_path)
    ref = TableRef(KEYSPACE, "orders_bad")
    result = run(spark, world, config, Interval(world.start, world.end), table="orders_bad")
    generations = source_for(world.client, config).spans(ref)
    built = adapters(spark, world, config, table="orders_bad")
    checks = built.row_checks.check(result)
    assert not checks.passed
    (colocation,) = [c for c in checks.checks if "colocation" in c.check]
    assert not colocation.passed and colocation.observed >= world.misrouted_writes
    assert [c.check for c in checks.failures] == [colocation.check]
    # Each named row really is misrouted: recompute where its key belongs.
    spans = {g.label: g for g in generations}
    for sample in colocation.samples:
        generation = spans[sample["generation"]]
        assert generation.get_stream(sample["base_token"]).hex != sample["stream_hex"]
    # The task log names the first rows; the checks page (below) has the rest.
    for sample in colocation.samples[:SUMMARY_ROWS]:
        assert sample["stream_hex"] in checks.summary and sample["cdc_time"] in checks.summary
    if len(colocation.samples) > SUMMARY_ROWS:
        assert f"{len(colocation.samples) - SUMMARY_ROWS} more row(s)" in checks.summary
    checked = result.outcome().checked(row_checks(checks))
    record = changes_report(checked, checks)
    (outcome,) = [o for o in record.expectations if not o.passed]
    first = colocation.samples[0]
    assert first["stream_hex"] in outcome.details and '"pk":' in outcome.details
    # The report site names it: the run's checks page (linked from the index) lists it.
    record_changes_run(config.report_dir, checked, checks)
    assert checks.page is not None and first["stream_hex"] in checks.page.read_text()
    assert (
        checks.page.relative_to(config.report_dir).as_posix()
        in (config.report_dir / "index.html").read_text()
    )
    lake = built.lake.dataset()
    assert lake.count() == len(source_rows(world, "orders_bad"))


def test_rows_failing_the_checks_are_quarantined_before_any_checkpoint(
    spark: Any, world: World, tmp_path: Path
) -> None:
    """The whole run, checks included: the misrouted rows fail colocation, so the job's
    commit is reverted (time travel still reads it) and nothing is checkpointed."""
    config = world.config("t_quarantine", tmp_path / "lake", tmp_path / "reports")
    ref = TableRef(KEYSPACE, "orders_bad")
    built = adapters(spark, world, config, table="orders_bad")
    request = ChangesRequest(ref, Interval(world.start, world.end), run_id="quarantine-1")
    with pytest.raises(ChangesInvalid) as caught:
        run_changes(request, built.ports(), config, SETTINGS, cdc_ttl=built.log_table.ttl)
    output = caught.value.output
    assert output is not None and output.status == "row checks failed"
    assert output.report is not None
    (quarantined,) = output.quarantined_versions
    assert output.lake_versions == (quarantined, quarantined + 1)
    assert built.checkpoints.checkpoints(ref) == []
    watermark = built.checkpoints.progress(ref).watermark  # at most the table's start
    assert watermark is None or watermark <= min(
        datetime.fromisoformat(w.start) for w in output.windows
    )
    assert built.lake.dataset().count() == 0  # the current version no longer holds them
    assert built.lake.dataset(quarantined).count() == len(source_rows(world, "orders_bad"))
    page = Path(output.report).read_text()
    assert f"the rows of lake version {quarantined} failed the row checks" in page
    assert Path(output.report).is_file()


def test_a_raised_cdc_ttl_does_not_hide_the_rows_that_expired_under_the_old_one(
    spark: Any, world: World, tmp_path: Path
) -> None:
    """ScyllaDB writes each log row with the TTL in effect then. A table's CDC TTL raised
    from 20 s to a day after a run, and the next run more than 20 s later: the rows logged
    between the two under the old TTL are gone, and the run must say so (naming the TTL
    that bounds them) instead of going by the day and skipping them silently."""
    table = "orders_ttl"
    create_cdc_table(world.cluster, orders_table(KEYSPACE, table=table, cdc_ttl=20))
    config = world.config("t_ttl", tmp_path)
    store = CqlCheckpointStore(world.client, config.target_keyspace)
    store.ensure_schema()  # before the clock starts: schema changes can take seconds
    settings = SETTINGS.with_overrides(expiry_margin=timedelta(milliseconds=500))
    spec = WorkloadSpec(
        keyspace=KEYSPACE, table=table, rate=50, duration=timedelta(seconds=1), keys=10, seed=41
    )
    start = datetime.now(UTC)
    run_workload(world.cluster, spec)
    middle = datetime.now(UTC) + timedelta(milliseconds=5)
    time.sleep((LEEWAY + CONFIDENCE).total_seconds() + 0.2)  # let the windows close
    first = run(spark, world, config, Interval(start, middle), table, settings)
    assert first.rows_written > 0, first.outcome()
    recorded = store.progress(TableRef(KEYSPACE, table)).log_ttls
    assert recorded is not None and recorded.seen == 20
    assert run_workload(world.cluster, replace(spec, seed=42)).log_rows > 0
    end = datetime.now(UTC)
    alter_cdc_table(world.cluster, KEYSPACE, table, CdcOptions(ttl=86_400))
    time.sleep(21)  # the DAG paused past the old TTL: the log lost what it wrote since
    log = f"{KEYSPACE}.{table}_scylla_cdc_log"
    assert world.client.session.execute(f"SELECT COUNT(*) FROM {log}").one()[0] == 0
    with pytest.raises(DataExpired, match=r"minus the CDC TTL \(0:00:20\)"):
        run(spark, world, config, Interval(middle, end), table, settings)


def test_state_only_moves_forward_and_prunes_what_the_watermark_implies(world: World) -> None:
    store = CqlCheckpointStore(world.client, f"{PREFIX}t_state")
    store.ensure_schema()
    table = TableRef(KEYSPACE, "orders")
    config = world.config("t_state", Path("/nonexistent"))
    old, new = source_for(world.client, config).spans(table)
    t0 = old.start
    store.record_start(table, t0 + timedelta(seconds=5))
    store.record_start(table, t0)  # earlier start wins
    store.record_start(table, t0 + timedelta(seconds=9))
    later, earlier = t0 + timedelta(milliseconds=2), t0 + timedelta(milliseconds=1)
    store.save(table, [BucketCheckpoint(old.start, 3, later)])
    store.save(table, [BucketCheckpoint(old.start, 3, earlier)])  # a late, older write
    (saved,) = store.checkpoints(table)
    assert saved.checkpoint == later
    store.save_watermark(table, new.start)
    store.save_watermark(table, new.start - timedelta(milliseconds=1))  # older: ignored
    progress = store.progress(table)
    assert (progress.started_at, progress.watermark) == (t0, new.start)
    assert progress.log_ttls is None  # no run recorded any
    assert store.prune(table, [old, new]) == 1  # the old generation ends at the watermark
    assert store.checkpoints(table) == []
    # What the runs know of the TTLs, written with the watermark: a newer watermark brings
    # its record; at the same one each cell keeps the cautious value (the shorter TTL, 0 -
    # none - the longest; the later ``since``); an older watermark's is ignored.
    second = t0 + timedelta(seconds=1)
    store.save_watermark(table, new.start, log_ttls=LogTtls(3600, 86_400, t0))
    store.save_watermark(table, new.start, log_ttls=LogTtls(0, 3600, second))
    assert store.table_state(table).log_ttls == LogTtls(3600, 3600, second)
    store.save_watermark(table, new.start + timedelta(milliseconds=1), log_ttls=LogTtls(0, 0, t0))
    store.save_watermark(table, new.start, log_ttls=LogTtls(60, 60, t0))  # older: ignored
    assert store.progress(table).log_ttls == LogTtls(0, 0, t0)
    store.advance_watermark(table, new.start + timedelta(hours=1))  # re-bootstrap
    assert store.table_state(table).floor == new.start + timedelta(hours=1)
    # What was known of the TTLs was about rows before it: forgotten.
    assert store.progress(table).log_ttls == LogTtls(0, 0, new.start + timedelta(hours=1))
    assert [p.table for p in store.all_progress()] == [table]
    catalog = CdcCatalog(world.client, world.cluster.schema)
    (orders,) = [t for t in catalog.tables((KEYSPACE,)) if t.table == TableRef(KEYSPACE, "orders")]
    assert orders.ttl_seconds == 86_400 and orders.created is not None


def test_state_tables_of_an_earlier_version_gain_the_lake_version(world: World) -> None:
    """Tables created before versions and TTLs were recorded get the columns on first
    use, a read included."""
    keyspace = f"{PREFIX}old_state"
    session = world.client.session
    session.execute(
        f"CREATE KEYSPACE {keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}",
        timeout=120,
    )
    session.execute(
        f"CREATE TABLE {keyspace}.cdc_bucket_checkpoints (keyspace_name text, table_name text, "
        "generation timestamp, bucket int, checkpoint timestamp, window_start timestamp, "
        "run_id text, updated_at timestamp, "
        "PRIMARY KEY ((keyspace_name, table_name), generation, bucket))",
        timeout=120,
    )
    session.execute(
        f"CREATE TABLE {keyspace}.cdc_table_progress (keyspace_name text, table_name text, "
        "started_at timestamp, watermark timestamp, watermark_updated_at timestamp, "
        "run_id text, PRIMARY KEY ((keyspace_name, table_name)))",
        timeout=120,
    )
    world.client.cluster.refresh_schema_metadata()
    store = CqlCheckpointStore(world.client, keyspace)
    table = TableRef(KEYSPACE, "orders")
    # A reader may come first after an upgrade (a replication run, the maintenance DAG).
    assert store.progress(table).watermark is None
    moment = world.start.replace(microsecond=0)
    store.save(table, [BucketCheckpoint(moment, 0, moment, lake_version=7)])
    store.save_watermark(table, moment, "r", lake_version=7, log_ttls=LogTtls(60, 60, moment))
    assert [c.lake_version for c in store.checkpoints(table)] == [7]
    assert store.progress(table).lake_version == 7
    assert store.progress(table).log_ttls == LogTtls(60, 60, moment)
