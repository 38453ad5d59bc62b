"""The changes lake of one table: a Delta table written by Spark, one commit per job.

The :class:`~cdcgen.ports.ChangesLake` port over the table of :mod:`.layout` and one
Spark job per :meth:`DeltaChangesLake.write`: the windows' stream reads fanned out over
Spark tasks by replica (:class:`~.stream_reads.StreamFanout`), each task reading its
streams (:func:`~.read_task.read_changes`), or, for a job of many streams, the ring's
token ranges scanned and each row placed (:mod:`.range_reads`,
:func:`~.range_task.read_ranges`). The rows are committed with ``replaceWhere`` over
exactly the job's ``generation/window/bucket`` partitions: one commit replaces what the
table held for them (a backfill's earlier rows, a killed run's unacknowledged windows)
and touches nothing else, and a job that dies before its commit leaves no visible
trace. The rows reach the files in the order they were read (enough concurrent writers
that Spark never re-sorts them), which is each key's order.

The log's columns follow the base table's (an ALTER on ScyllaDB changes both), so the
table's schema follows the log's: a job's rows with a column the table lacks add it in
the same commit (Delta's ``mergeSchema``; earlier rows read it as null), and a column
the log dropped stays in the table, null in the rows written since. A run never
rewrites the table's schema otherwise, nor drops a column a reader may use.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.delta_tables import commit_marker, commit_version, table_version
from cdcgen.adapters.errors import DeltaLogError
from cdcgen.adapters.lake_store import LakeLocation, LakeRoot
from cdcgen.changes.errors import OverlappingReads
from cdcgen.changes.layout import (
    STATS_COLUMNS,
    STATS_DEFAULT,
    lake_buckets,
    list_windows,
    window_predicate,
)
from cdcgen.changes.range_reads import RangeFanout
from cdcgen.changes.range_task import read_ranges
from cdcgen.changes.read_task import ReadJob, read_changes
from cdcgen.changes.stream_reads import StreamFanout, StreamRead, stream_reads
from cdcgen.changes.window_index import WindowIndex
from cdcgen.core.change_batch import PARTITION_COLUMNS
from cdcgen.core.lake_buckets import LakeBuckets
from cdcgen.core.read_strategy import ReadStrategy, choose_read, job_shape
from cdcgen.core.windows import LakeWindow, Window
from cdcgen.ports import LakeCommit
from cdcgen.spark_runtime.fanout import (
    Task,
    TaskFunction,
    arrow_struct,
    counter_accumulator,
    fan_out,
)

if TYPE_CHECKING:
    from pyspark import Broadcast
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: Parquet writers open at once per task: one per partition a task writes, so that
#: Spark never sorts rows by partition (which would reorder a key's changes).
CONCURRENT_WRITERS = 256


class DeltaChangesLake:
    """One table's dataset under ``root`` (``<lake>/changes/<keyspace>.<table>``)."""

    def __init__(
        self,
        spark: SparkSession,
        root: LakeRoot,
        job: ReadJob,
        fanout: StreamFanout,
        ranges: RangeFanout | None = None,
    ) -> None:
        self._spark = spark
        self._root = LakeLocation.of(root)
        self._job = job
        self._fanout = fanout
        self._ranges = ranges  # None: per-stream reads only
        self._buckets: LakeBuckets | None = None

    @property
    def root(self) -> LakeLocation:
        return self._root

    @property
    def location(self) -> str:
        return self._root.uri

    def buckets(self, wanted: int) -> LakeBuckets:
        self._buckets = lake_buckets(self._root, wanted, self._job.log_table.partitioner)
        return self._buckets

    def windows(self) -> list[LakeWindow]:
        return list_windows(self._root)

    def version(self) -> int | None:
        return table_version(self._root)

    def remove(self, windows: Sequence[LakeWindow]) -> LakeCommit:
        return self._commit_statement(
            f"DELETE FROM delta.`{self._root.spark_uri}` WHERE {window_predicate(windows)}"
        )

    def revert(self, commit: LakeCommit) -> LakeCommit:
        """Delta's ``RESTORE`` to the version before ``commit`` (a ``DELETE`` of every row
        when ``commit`` created the table), only while ``commit`` is the latest version:
        restoring over another writer's commit would drop it."""
        current = table_version(self._root)
        if current != commit.version:
            raise DeltaLogError(
                f"{self._root.uri}: not reverting version {commit.version}, the table is at "
                f"version {current}"
            )
        table = f"delta.`{self._root.spark_uri}`"
        if commit.previous is None:
            return self._commit_statement(f"DELETE FROM {table}", current)
        restore = f"RESTORE TABLE {table} TO VERSION AS OF {commit.previous}"
        return self._commit_statement(restore, current)

    def _commit_statement(self, statement: str, before: int | None = None) -> LakeCommit:
        """Runs one committing SQL statement; its version, found by a marker. ``before``:
        the table's version, when the caller just read it."""
        marker = commit_marker()
        before = table_version(self._root) if before is None else before
        key = "spark.databricks.delta.commitInfo.userMetadata"
        self._spark.conf.set(key, marker)
        try:
            self._spark.sql(statement)
        finally:
            self._spark.conf.unset(key)
        return LakeCommit(commit_version(self._root, marker, before), Counter(), before)

    def write(self, windows: Sequence[Window], replacing: Sequence[LakeWindow] = ()) -> LakeCommit:
        """One Spark job: read every stream of ``windows`` and commit the rows in place
        of those partitions and of ``replacing``'s; counts ``rows:<generation>``,
        ``queries`` and ``retries``.

        The job reads stream by stream or scans token ranges, as
        :func:`~cdcgen.core.read_strategy.choose_read` decides for its shape; both
        write the same rows to the same partitions."""
        spark = self._spark
        predicate = window_predicate([*(w.lake_window for w in windows), *replacing])
        marker, before = commit_marker(), table_version(self._root)
        reads = stream_reads(windows)
        index = self.range_index(windows, reads)
        counters = counter_accumulator(spark)
        broadcasts: list[Broadcast[Any]] = []
        if index is not None and self._ranges is not None:
            slices = None if self._buckets is None else self._buckets.ring_slices
            ranges = self._ranges.tasks(spark, index, slices)
            shared = spark.sparkContext.broadcast(index)
            broadcasts.append(shared)
            task: TaskFunction = partial(read_ranges, self._job, counters, shared)
            self._log_job(windows, len(reads), ranges, "token ranges")
            tasks: list[Task[Any]] = list(ranges)
        else:
            tasks = list(self._fanout.tasks(spark, windows))
            task = partial(read_changes, self._job, counters)
            self._log_job(windows, len(reads), tasks, "stream reads")
        # Runtime SQL settings, also on a session someone else created.
        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        spark.conf.set("spark.sql.maxConcurrentOutputFileWriters", str(CONCURRENT_WRITERS))
        spark.conf.set(STATS_DEFAULT, STATS_COLUMNS)
        rows, broadcast = fan_out(spark, tasks, task, arrow_struct(self._job.schema))
        broadcasts.append(broadcast)
        try:
            (
                rows.write.format("delta")
                .mode("overwrite")
                .option("replaceWhere", predicate)
                .option("mergeSchema", "true")  # a column the log gained: the table's too
                .option("userMetadata", marker)
                .partitionBy(*PARTITION_COLUMNS)
                .save(self._root.spark_uri)
            )
        finally:
            for shared_value in broadcasts:
                shared_value.unpersist()
        counted: Counter[str] = counters.value
        return LakeCommit(commit_version(self._root, marker, before), counted, before)

    @property
    def ranges(self) -> RangeFanout | None:
        return self._ranges

    def range_index(
        self, windows: Sequence[Window], reads: Sequence[StreamRead] | None = None
    ) -> WindowIndex | None:
        """The window index of ``windows`` if reading them is to scan token ranges (the
        rule, :func:`~cdcgen.core.read_strategy.choose_read`), else None."""
        reads = stream_reads(windows) if reads is None else reads
        if self._ranges is None:
            return None
        try:
            index: WindowIndex | None = WindowIndex.of(reads)
        except OverlappingReads:
            index = None
        buckets = (
            self._buckets.count
            if self._buckets is not None
            else 1 + max((w.bucket for w in windows), default=0)
        )
        shape = job_shape(
            ((w.generation.label, w.bucket) for w in windows),
            len(reads),
            buckets,
            disjoint=index is not None,
        )
        chosen = choose_read(self._ranges.strategy, shape, self._ranges.ranges_from)
        return index if chosen is ReadStrategy.RANGES else None

    def _log_job(
        self, windows: Sequence[Window], reads: int, tasks: Sequence[Task[Any]], what: str
    ) -> None:
        log.info(
            "%s: %d windows, %d stream reads as %s: %d tasks in %d replica or ring-share groups",
            self._job.log_table.table,
            len(windows),
            reads,
            what,
            len(tasks),
            len({replica for replica, _ in tasks}),
        )

    def dataset(self, version: int | None = None) -> DataFrame:
        """The table's rows as Spark reads them (at ``version``, default the latest)."""
        reader = self._spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(self._root.spark_uri)
