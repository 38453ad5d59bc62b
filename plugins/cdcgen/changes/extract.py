"""Extract closed windows of one CDC table into the lake with Spark.

The Spark driver plans (:mod:`.windows`), routes (:mod:`.routing`) and keeps state
(:mod:`.checkpoints`); the Spark tasks only read. One run:

1. describe the log table, load checkpoints and the table's progress, list the lake;
2. plan the windows (closed ones only; :class:`~.windows.DataExpired` if too old) and
   delete the files a killed run left unacknowledged;
3. for each job (a group of buckets): one Spark task per group of streams sharing a
   primary replica, each opening (once per Python worker) a driver session whose policy
   sends every query to a replica of its stream's token; the task reads its streams one
   query each, drops repeated rows, and yields Arrow batches (``mapInArrow``);
4. write Parquet partitioned by ``date/generation/window/bucket`` with dynamic partition
   overwrite, so the job replaces exactly its own windows;
5. only then checkpoint the job's streams (to the window end), so a kill before this
   point leaves files the next run treats as unacknowledged and replaces;
6. finally recompute and store the consistency watermark, and prune checkpoint rows the
   watermark now implies.

Incremental runs move checkpoints forward; backfills re-extract acknowledged windows
exactly and never touch checkpoints.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdcgen.changes.checkpoints import CheckpointStore
from cdcgen.changes.columns import LakeBatchBuilder, Placement, column_specs, lake_schema
from cdcgen.changes.layout import (
    PARTITION_COLUMNS,
    lake_buckets,
    list_windows,
    remove_window,
    table_root,
)
from cdcgen.changes.log_table import LogTable, describe_log_table
from cdcgen.changes.routing import plan_tasks, primary_replica
from cdcgen.changes.settings import ChangesSettings
from cdcgen.changes.stream_reader import SessionKey, StreamReader, shared_session
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.clocks import NodeClock
from cdcgen.core.planner import plan_windows
from cdcgen.core.time import from_micros, to_micros
from cdcgen.core.watermark import StreamCheckpoint, consistency_watermark
from cdcgen.core.windows import GenerationSpan, Interval, Mode, Window, WindowPlan, WindowPolicy

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig

log = logging.getLogger(__name__)

CHANGES_DIR = "changes"


class InjectedFault(RuntimeError):
    """Raised on purpose by a :class:`FaultPlan` (tests of kill-and-resume)."""


@dataclass(frozen=True)
class FaultPlan:
    """Make a run die part-way, the way a killed worker or driver would.

    ``fail_task_after_streams``: a read task raises after reading that many streams (the
    Spark job fails, nothing of it is committed). ``fail_after_jobs``: the driver raises
    after that many jobs were written *and* checkpointed.
    """

    fail_task_after_streams: int | None = None
    fail_after_jobs: int | None = None


@dataclass(frozen=True)
class StreamRead:
    """One query: a stream's window (ms bounds) and where its rows go in the lake."""

    stream: bytes
    start_ms: int
    end_ms: int
    generation: str
    window: str
    bucket: int


@dataclass(frozen=True)
class ReadJob:
    """What every read task needs, pickled once into the Spark closure."""

    session_key: SessionKey
    log_table: LogTable
    settings: ChangesSettings
    schema: Any  # pa.Schema of the lake rows
    fault: FaultPlan | None = None


@dataclass
class ExtractionResult:
    """What a run did; ``to_json()`` is what the DAG task returns through XCom."""

    table: TableRef
    interval: Interval
    mode: Mode
    run_id: str
    plan: WindowPlan
    lake_root: Path
    jobs: int = 0
    rows_written: int = 0
    streams_read: int = 0
    rows_per_generation: Counter[str] = field(default_factory=Counter)
    garbage_removed: int = 0
    watermark: datetime | None = None
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def windows(self) -> tuple[Window, ...]:
        return self.plan.windows

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table.qualified,
            "interval": [self.interval.start.isoformat(), self.interval.end.isoformat()],
            "mode": self.mode.value,
            "run_id": self.run_id,
            "lake_root": str(self.lake_root),
            "windows": [
                {
                    "generation": w.generation.label,
                    "bucket": w.bucket,
                    "start": w.start.isoformat(),
                    "end": w.end.isoformat(),
                    "streams": len(w.streams),
                    "kind": w.kind.value,
                }
                for w in self.windows
            ],
            "pending": [
                {
                    "generation": p.generation,
                    "end": p.end.isoformat(),
                    "closes_at": p.closes_at.isoformat(),
                    "reason": p.reason,
                }
                for p in self.plan.pending
            ],
            "jobs": self.jobs,
            "rows_written": self.rows_written,
            "streams_read": self.streams_read,
            "rows_per_generation": dict(self.rows_per_generation),
            "garbage_removed": self.garbage_removed,
            "watermark": None if self.watermark is None else self.watermark.isoformat(),
            "seconds": round(self.seconds, 3),
            "phases": {k: round(v, 3) for k, v in self.phases.items()},
        }


class Phases:
    """Seconds spent per phase of a run (reported, so slow phases are visible)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.monotonic()

    def mark(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._last
        self._last = now


# --- Spark --------------------------------------------------------------------------------

CONCURRENT_WRITERS = 256

SPARK_CONF: dict[str, str] = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.python.worker.reuse": "true",
    # Window and generation labels must stay text when the lake is read back.
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
}


def changes_spark_session(app_name: str = "cdcgen-changes") -> SparkSession:
    """The project's small-machine Spark session, with the Python workers on this venv."""
    from cdcgen.extract.spark_extract import spark_session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return spark_session(app_name, SPARK_CONF)


def task_reads(tasks: Any, batches: Iterable[pa.RecordBatch]) -> Iterator[StreamRead]:
    """The stream reads of this Spark task: its ``id`` indexes the broadcast task list."""
    for batch in batches:
        for task_id in batch.column("id").to_pylist():
            yield from tasks.value[task_id]


def _read_task(
    job: ReadJob, tasks: Any, counters: Any, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """A Spark task: read its streams (one query each) and yield lake rows as Arrow.

    Rows leave in the order read: per stream, ``cdc$time`` then ``batch_seq_no``.
    """
    session = shared_session(job.session_key)
    reader = StreamReader(session, job.log_table, job.settings)
    specs = column_specs(reader.column_metadata)
    builder = LakeBatchBuilder(
        specs, job.log_table.partition_key, reader.protocol_version, job.schema
    )
    if lake_schema(specs) != job.schema:
        from cdcgen.changes.stream_reader import TerminalReadError

        raise TerminalReadError(
            f"{job.log_table.table.qualified_log} changed schema during the run; re-run it"
        )
    limit = job.settings.batch_rows
    segments: list[tuple[list[Any], Placement]] = []
    buffered = 0
    written: Counter[str] = Counter()
    fail_after = job.fault.fail_task_after_streams if job.fault else None
    for streams_done, read in enumerate(task_reads(tasks, batches), start=1):
        placement = Placement(read.generation, read.window, read.bucket)
        seen: set[tuple[Any, Any]] = set()
        start, end = from_micros(read.start_ms * 1000), from_micros(read.end_ms * 1000)
        for page in reader.pages(read.stream, start, end):
            rows = builder.unique_rows(page, seen)
            if rows:
                segments.append((rows, placement))
                buffered += len(rows)
                written[f"rows:{read.generation}"] += len(rows)
            if buffered >= limit:
                yield builder.to_batch(segments)
                segments, buffered = [], 0
        if fail_after is not None and streams_done >= fail_after:
            raise InjectedFault(f"injected fault after {streams_done} streams in a read task")
    if segments:
        yield builder.to_batch(segments)
    written.update({"queries": reader.stats.queries, "retries": reader.stats.retries})
    counters.add(written)


def _counter_accumulator(spark: SparkSession) -> Any:
    from pyspark.accumulators import AccumulatorParam

    class CounterParam(AccumulatorParam):  # type: ignore[type-arg]
        def zero(self, value: Counter[str]) -> Counter[str]:
            return Counter()

        def addInPlace(self, a: Counter[str], b: Counter[str]) -> Counter[str]:
            a.update(b)
            return a

    return spark.sparkContext.accumulator(Counter(), CounterParam())


def task_frame(
    spark: SparkSession, tasks: Sequence[tuple[str, list[StreamRead]]]
) -> tuple[DataFrame, Any]:
    """One Spark partition per task, in task order, and the broadcast task list.

    ``spark.range(n, numPartitions=n)`` puts exactly one id in each partition without a
    shuffle or a Python stage; the task looks its reads up by id. Tasks are ordered
    round-robin over replicas (:func:`~.routing.plan_tasks`), so the first ones to run
    hit different nodes.
    """
    reads = [sorted(chunk, key=lambda r: (r.generation, r.window, r.bucket)) for _, chunk in tasks]
    broadcast = spark.sparkContext.broadcast(reads)
    count = max(1, len(reads))
    return spark.range(0, len(reads), 1, count), broadcast


def spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def write_windows(
    spark: SparkSession,
    job: ReadJob,
    tasks: Sequence[tuple[str, list[StreamRead]]],
    root: Path,
) -> Counter[str]:
    """Run one Spark job: read every task's streams and overwrite exactly their partitions."""

    counters = _counter_accumulator(spark)
    # Runtime SQL settings, also on a session someone else created. Enough concurrent
    # writers that Spark never re-sorts the rows: they reach the files in the order
    # they were read, which is each key's order.
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    spark.conf.set("spark.sql.maxConcurrentOutputFileWriters", str(CONCURRENT_WRITERS))
    frame, broadcast = task_frame(spark, tasks)
    rows = frame.mapInArrow(partial(_read_task, job, broadcast, counters), spark_schema(job.schema))
    try:
        (
            rows.write.mode("overwrite")
            .option("partitionOverwriteMode", "dynamic")
            .partitionBy(*PARTITION_COLUMNS)
            .parquet(str(root))
        )
    finally:
        broadcast.unpersist()
    result: Counter[str] = counters.value
    return result


# --- the run -------------------------------------------------------------------------------


def _jobs(windows: Sequence[Window], buckets_per_job: int) -> list[list[Window]]:
    """Windows grouped into Spark jobs by bucket (0: a single job)."""
    if not windows:
        return []
    if buckets_per_job == 0:
        return [list(windows)]
    buckets = sorted({w.bucket for w in windows})
    groups = [
        set(buckets[i : i + buckets_per_job]) for i in range(0, len(buckets), buckets_per_job)
    ]
    return [[w for w in windows if w.bucket in group] for group in groups]


def stream_reads(windows: Iterable[Window]) -> list[StreamRead]:
    return [
        StreamRead(
            stream.raw,
            to_micros(w.start) // 1000,
            to_micros(w.end) // 1000,
            w.generation.label,
            w.label,
            w.bucket,
        )
        for w in windows
        for stream in w.streams
    ]


def read_lake(spark: SparkSession, root: Path) -> DataFrame:
    """The table's lake dataset, partition values typed as written (labels stay text)."""
    from pyspark.sql import functions as F

    key = "spark.sql.sources.partitionColumnTypeInference.enabled"
    before = spark.conf.get(key)
    spark.conf.set(key, "false")
    try:
        frame = spark.read.option("basePath", str(root)).parquet(str(root))
    finally:
        spark.conf.set(key, before or "true")
    return frame.withColumn("bucket", F.col("bucket").cast("int"))


def extract_changes(
    spark: SparkSession,
    config: PipelineConfig,
    settings: ChangesSettings,
    table: TableRef,
    generations: Sequence[GenerationSpan],
    interval: Interval,
    clocks: Sequence[NodeClock],
    *,
    mode: Mode = Mode.INCREMENTAL,
    run_id: str | None = None,
    now: datetime | None = None,
    client: CqlClient | None = None,
    faults: FaultPlan | None = None,
) -> ExtractionResult:
    """Extract every closed window of ``table`` for ``interval`` (see the module doc).

    ``generations`` are the table's generations (vnode) or stream sets (tablets) as
    spans, oldest first; ``clocks`` every node's clock, read just before. Raises
    :class:`~.windows.DataExpired` (terminal) when a window is past the CDC TTL.
    Windows that are not closed yet are returned in ``result.plan.pending``.
    """
    from cdcgen.adapters.cql import connect

    started = time.monotonic()
    run_id = run_id or f"manual-{uuid.uuid4().hex[:12]}"
    now = now or datetime.now(UTC)
    own_client = client is None
    client = client or connect(config.contact_points, config.port)
    phases = Phases()
    try:
        log_table = describe_log_table(client, table, settings, config.source_schema)
        store = CheckpointStore(client, config.target_keyspace)
        store.ensure_schema()
        state = store.table_state(table)
        phases.mark("state")
        root = table_root(Path(config.lake_path) / CHANGES_DIR, table)
        buckets = lake_buckets(root, settings.buckets)
        policy = WindowPolicy(
            leeway=config.generation_leeway,
            confidence_window=config.confidence_window,
            ttl=log_table.ttl,
            expiry_margin=settings.expiry_margin,
            buckets=buckets,
        )
        plan = plan_windows(
            table, generations, interval, state, clocks, policy, now, list_windows(root), mode
        )
        result = ExtractionResult(table, interval, mode, run_id, plan, root, phases=phases.seconds)
        phases.mark("plan")
        if plan.first_run and mode is Mode.INCREMENTAL:
            store.record_start(table, plan.floor, run_id)
        for garbage in plan.garbage:
            result.garbage_removed += remove_window(root, garbage)
        if plan.windows:
            _run_jobs(spark, config, settings, client, log_table, store, plan, result, faults)
        phases.mark("jobs")
        if mode is Mode.INCREMENTAL:
            refreshed = store.table_state(table)
            watermark = consistency_watermark(generations, refreshed)
            if watermark is not None:
                store.save_watermark(table, watermark, run_id)
                store.prune(table, generations)
        result.watermark = store.progress(table).watermark
        phases.mark("watermark")
        result.seconds = time.monotonic() - started
        log.info("changes of %s: %s", table, result.to_json())
        return result
    finally:
        if own_client:
            client.close()


def read_job(
    config: PipelineConfig,
    settings: ChangesSettings,
    client: CqlClient,
    log_table: LogTable,
    faults: FaultPlan | None = None,
) -> ReadJob:
    """The closure every read task gets: how to connect, what to read, the row schema."""
    prepared = client.session.prepare(log_table.window_query())
    return ReadJob(
        SessionKey(
            tuple(config.contact_points),
            config.port,
            log_table.partitioner,
            settings.request_timeout.total_seconds(),
        ),
        log_table,
        settings,
        lake_schema(column_specs(prepared.result_metadata)),
        faults,
    )


def replica_lookup(client: CqlClient, log_table: LogTable) -> Callable[[StreamRead], str]:
    """``read -> primary replica address`` from the driver's token map (memoized)."""
    metadata = client.cluster.metadata
    keyspace = log_table.table.keyspace
    replicas: dict[bytes, str] = {}

    def replica_of(read: StreamRead) -> str:
        found = replicas.get(read.stream)
        if found is None:
            found = primary_replica(metadata, keyspace, read.stream, log_table.partitioner)
            replicas[read.stream] = found
        return found

    return replica_of


def min_tasks(spark: SparkSession, settings: ChangesSettings) -> int:
    """At least two tasks per Spark core unless configured: reads are I/O-bound."""
    return settings.min_tasks or 2 * int(spark.sparkContext.defaultParallelism)


def read_tasks(
    windows: Sequence[Window],
    replica_of: Callable[[StreamRead], str],
    settings: ChangesSettings,
    at_least: int = 1,
) -> list[tuple[str, list[StreamRead]]]:
    """The windows' stream reads, grouped into tasks by primary replica."""
    return plan_tasks(stream_reads(windows), replica_of, settings.streams_per_task, at_least)


def _run_jobs(
    spark: SparkSession,
    config: PipelineConfig,
    settings: ChangesSettings,
    client: CqlClient,
    log_table: LogTable,
    store: CheckpointStore,
    plan: WindowPlan,
    result: ExtractionResult,
    faults: FaultPlan | None,
) -> None:
    from cdcgen.progress import Progress

    job = read_job(config, settings, client, log_table, faults)
    replica_of = replica_lookup(client, log_table)
    root = result.lake_root
    progress = Progress(
        total=sum(len(w.streams) for w in plan.windows),
        unit="streams",
        log=log.info,
        every=0.0,  # one line per Spark job: jobs take seconds to minutes each
        label=f"{log_table.table} {result.mode.value}",
    )
    for number, windows in enumerate(_jobs(plan.windows, settings.buckets_per_job), start=1):
        reads = stream_reads(windows)
        tasks = plan_tasks(reads, replica_of, settings.streams_per_task, min_tasks(spark, settings))
        log.info(
            "%s job %d: %d windows, %d streams, %d tasks over %d replicas",
            log_table.table,
            number,
            len(windows),
            len(reads),
            len(tasks),
            len({replica for replica, _ in tasks}),
        )
        counters = write_windows(spark, job, tasks, root)
        for key, count in counters.items():
            if key.startswith("rows:"):
                result.rows_per_generation[key.removeprefix("rows:")] += count
                result.rows_written += count
        result.jobs += 1
        result.streams_read += len(reads)
        log.info("%s job %d done: %s", log_table.table, number, dict(counters))
        progress.advance(
            len(reads), rows=sum(c for k, c in counters.items() if k.startswith("rows:"))
        )
        if result.mode is Mode.INCREMENTAL:
            store.save(
                log_table.table,
                (
                    StreamCheckpoint(w.generation.start, s, w.end, w.start, result.run_id)
                    for w in windows
                    for s in w.streams
                ),
            )
        if faults and faults.fail_after_jobs is not None and result.jobs >= faults.fail_after_jobs:
            raise InjectedFault(f"injected fault after {result.jobs} checkpointed job(s)")
