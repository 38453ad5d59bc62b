"""The range strategy writes exactly the lake rows of the per-stream strategy.

One emulated cluster with two generations (the workload crosses the switch) writes CDC
log rows to a real Cassandra; the same plans are then extracted twice, once forced to
one query per stream and once forced to token-range scans
(``CDCGEN_CHANGES_READ=streams|ranges``), into separate lakes and state keyspaces, and
the lakes compared partition by partition (``generation/window/bucket``) and row by row:

* two incremental runs (the second from the first's checkpoints, so buckets start at
  different times and the scan must drop rows before each bucket's checkpoint);
* a range-strategy run killed between a job's write and its checkpoint (its
  checkpoint store dies in the second save), then resumed: the resume replaces the
  unacknowledged windows and ends with the same lake as the uninterrupted per-stream run;
* a backfill over acknowledged windows, which replaces them exactly; the row checks,
  whose source counts are range scans too, pass on it and fail once a file is lost.

Spark runs locally on two cores, one shared session for the module.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from changes_fakes import InjectedFault, ship_to_spark_workers
from lake_files import committed_files

from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.changes.changes_run import ChangesRequest, extract_changes
from cdcgen.changes.job import table_adapters
from cdcgen.changes.layout import table_root
from cdcgen.changes.result import ExtractionRun
from cdcgen.changes.settings import ChangesSettings
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.generation import SourceMode
from cdcgen.core.read_strategy import ReadStrategy
from cdcgen.core.watermark import BucketCheckpoint
from cdcgen.core.windows import Interval, Mode
from cdcgen.schema import SourceSchema
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import (
    SandboxCluster,
    WorkloadSpec,
    create_cdc_table,
    orders_table,
    run_workload,
)
from cdcgen_dev.emulator.schema_setup import drop_keyspaces
from cdcgen_dev.sandbox import sandbox_config

pytestmark = pytest.mark.integration

PREFIX = "t_chranges_"
KEYSPACE = f"{PREFIX}ks"
TABLE = TableRef(KEYSPACE, "orders")
RING_DELAY = timedelta(milliseconds=500)
LEEWAY = timedelta(milliseconds=800)
CONFIDENCE = timedelta(milliseconds=500)
BASE = ChangesSettings(buckets=4, streams_per_task=8, page_size=200, batch_rows=500)
STREAMS = BASE.model_copy(update={"read_strategy": ReadStrategy.STREAMS})
RANGES = BASE.model_copy(update={"read_strategy": ReadStrategy.RANGES})
COLUMNS = ["cdc$stream_id", "cdc$time", "cdc$batch_seq_no", "pk", "ck", "v", "write_time"]


@dataclass
class World:
    client: CqlClient
    contact_points: tuple[str, ...]
    start: datetime
    end: datetime

    def config(self, target: str, lake: Path) -> PipelineConfig:
        return sandbox_config(
            PREFIX,
            contact_points=self.contact_points,
            source_mode=SourceMode.RAFT,
            target_keyspace=f"{PREFIX}{target}",
            lake_path=lake / target,
            report_dir=lake / "reports",
            generation_leeway=LEEWAY,
            confidence_window=CONFIDENCE,
        )


@pytest.fixture(scope="module")
def spark() -> Any:
    ship_to_spark_workers()
    return job_session(JobKind.CHANGES_EXTRACT, "cdcgen-changes-ranges-tests")


@pytest.fixture(scope="module")
def world(contact_points: tuple[str, ...]) -> Iterator[World]:
    client = connect(contact_points)
    schema = SourceSchema(PREFIX)
    drop_keyspaces(client, schema)
    for name in ("ks", "s", "r", "s_kill", "r_kill"):
        client.session.execute(f"DROP KEYSPACE IF EXISTS {PREFIX}{name}", timeout=120)
    cluster = SandboxCluster(client, schema, ring_delay=RING_DELAY, leeway=LEEWAY)
    cluster.join_node(SourceMode.RAFT, shards=3, vnodes=4, seed=21)
    create_cdc_table(cluster, orders_table(KEYSPACE))
    start = datetime.now(UTC)
    cluster.join_node(SourceMode.RAFT, shards=2, vnodes=4, seed=22)  # switch in ~2 s
    run_workload(
        cluster,
        WorkloadSpec(keyspace=KEYSPACE, rate=250, duration=timedelta(seconds=4), keys=150, seed=7),
    )
    end = datetime.now(UTC) + timedelta(milliseconds=5)
    time.sleep((LEEWAY + CONFIDENCE).total_seconds() + 0.2)
    yield World(client, contact_points, start, end)
    drop_keyspaces(client, schema)
    for name in ("ks", "s", "r", "s_kill", "r_kill"):
        client.session.execute(f"DROP KEYSPACE IF EXISTS {PREFIX}{name}", timeout=120)
    client.close()


class SaveDies:
    """A checkpoint store whose driver dies in its ``number``-th save, before saving:
    that job's files are in the lake, unacknowledged."""

    def __init__(self, store: Any, number: int) -> None:
        self._store = store
        self._left = number

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def save(self, table: TableRef, checkpoints: Iterable[BucketCheckpoint]) -> int:
        self._left -= 1
        if self._left <= 0:
            raise InjectedFault("injected fault: the driver died before checkpointing a job")
        return int(self._store.save(table, checkpoints))


def run(
    spark: Any,
    world: World,
    config: PipelineConfig,
    settings: ChangesSettings,
    interval: Interval,
    *,
    mode: Mode = Mode.INCREMENTAL,
    dies_in_save: int | None = None,
) -> ExtractionRun:
    built = table_adapters(world.client, spark, config, settings, TABLE)
    ports = built.ports(validate=False)
    if dies_in_save is not None:
        ports = replace(ports, checkpoints=SaveDies(ports.checkpoints, dies_in_save))
    request = ChangesRequest(TABLE, interval, mode)
    return extract_changes(request, ports, config, settings, cdc_ttl=built.log_table.ttl)


def lake(config: PipelineConfig) -> Counter[tuple[Any, ...]]:
    """Every lake row with its partition (``generation/window/bucket`` from the path)."""
    root = table_root(config.lake_path, TABLE)
    rows: Counter[tuple[Any, ...]] = Counter()
    for path in committed_files(root):
        parts = dict(p.split("=", 1) for p in path.relative_to(root).parts[:-1])
        partition = (parts["generation"], parts["window"], parts["bucket"])
        for row in pq.read_table(path, columns=COLUMNS).to_pylist():
            rows[(*partition, *(row[c] for c in COLUMNS))] += 1
    return rows


def buckets_per_task(config: PipelineConfig) -> list[int]:
    """How many buckets each Spark task wrote files to (``part-<task>-<job>.c000...``)."""
    written: defaultdict[str, set[str]] = defaultdict(set)
    for path in committed_files(table_root(config.lake_path, TABLE)):
        written[path.name.split(".")[0]].add(path.parent.name)
    return [len(buckets) for buckets in written.values()]


def test_ranges_write_the_same_rows_as_stream_reads(
    spark: Any, world: World, tmp_path: Path
) -> None:
    by_streams, by_ranges = world.config("s", tmp_path), world.config("r", tmp_path)
    middle = world.start + (world.end - world.start) / 2
    for interval in (Interval(world.start, middle), Interval(middle, world.end)):
        streams = run(spark, world, by_streams, STREAMS, interval)
        ranges = run(spark, world, by_ranges, RANGES, interval)
        assert ranges.rows_per_generation == streams.rows_per_generation
        assert [w.label for w in ranges.windows] == [w.label for w in streams.windows]
    expected = lake(by_streams)
    assert sum(expected.values()) > 500
    assert len({key[0] for key in expected}) == 2  # both generations
    assert len({key[:3] for key in expected}) > 4  # several windows and buckets
    assert max(expected.values()) == 1
    assert lake(by_ranges) == expected
    # Buckets are slices of the ring: a task scanning inside one writes one bucket.
    assert set(buckets_per_task(by_ranges)) == {1}
    # A backfill over the acknowledged windows replaces them with the same rows.
    backfill = run(
        spark, world, by_ranges, RANGES, Interval(world.start, world.end), mode=Mode.BACKFILL
    )
    assert backfill.rows_written == sum(expected.values())
    assert lake(by_ranges) == expected
    # The row checks count the source by range scans too, and see a lost file.
    checks = table_adapters(world.client, spark, by_ranges, RANGES, TABLE).row_checks
    verdict = checks.check(backfill)
    assert verdict.passed, [c.describe() for c in verdict.failures]
    counted = [c for c in verdict.checks if c.check == "row count equals the source's"]
    assert counted and all(c.passed for c in counted)
    # Rows deleted by a later commit: the checks of that version count them missing.
    built = table_adapters(world.client, spark, by_ranges, RANGES, TABLE)
    deleted = built.lake.remove([backfill.windows[0].lake_window])
    assert deleted.version > (backfill.lake_version or 0)
    verdict = checks.check(dataclasses.replace(backfill, lake_versions=[deleted.version]))
    assert not verdict.passed
    assert {c.check for c in verdict.failures} & {c.check for c in counted}


def test_a_killed_range_run_resumes_to_the_same_lake(
    spark: Any, world: World, tmp_path: Path
) -> None:
    by_streams, by_ranges = world.config("s_kill", tmp_path), world.config("r_kill", tmp_path)
    interval = Interval(world.start, world.end)
    run(spark, world, by_streams, STREAMS, interval)
    one_bucket_jobs = RANGES.model_copy(update={"buckets_per_job": 1})
    with pytest.raises(InjectedFault):
        run(spark, world, by_ranges, one_bucket_jobs, interval, dies_in_save=2)
    resumed = run(spark, world, by_ranges, one_bucket_jobs, interval)
    assert resumed.garbage_removed > 0  # the job written but never acknowledged
    assert lake(by_ranges) == lake(by_streams)
