"""The changes lake of one table: Hive-partitioned Parquet written by Spark.

The :class:`~cdcgen.ports.ChangesLake` port over the file layout of :mod:`.layout` and
one Spark job per :meth:`ParquetChangesLake.write`: the windows' stream reads fanned out
over Spark tasks by replica (:class:`~.stream_reads.StreamFanout`), each task reading
its streams (:func:`~.read_task.read_changes`), the rows written with dynamic partition
overwrite, so a job replaces exactly its own ``generation/window/bucket`` partitions
and nothing else. The rows reach the files in the order they were read (enough
concurrent writers that Spark never re-sorts them), which is each key's order.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from cdcgen.changes.layout import (
    PARTITION_COLUMNS,
    lake_buckets,
    list_windows,
    remove_window,
)
from cdcgen.changes.read_task import ReadJob, read_changes
from cdcgen.changes.stream_reads import StreamFanout
from cdcgen.core.windows import LakeWindow, Window
from cdcgen.spark.fanout import arrow_struct, counter_accumulator, fan_out

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: Parquet writers open at once per task: one per partition a task writes, so that
#: Spark never sorts rows by partition (which would reorder a key's changes).
CONCURRENT_WRITERS = 256


class ParquetChangesLake:
    """One table's dataset under ``root`` (``<lake>/changes/<keyspace>.<table>``)."""

    def __init__(self, spark: SparkSession, root: Path, job: ReadJob, fanout: StreamFanout) -> None:
        self._spark = spark
        self._root = Path(root)
        self._job = job
        self._fanout = fanout

    @property
    def root(self) -> Path:
        return self._root

    @property
    def location(self) -> str:
        return str(self._root)

    def buckets(self, wanted: int) -> int:
        return lake_buckets(self._root, wanted)

    def windows(self) -> list[LakeWindow]:
        return list_windows(self._root)

    def remove(self, window: LakeWindow) -> int:
        return remove_window(self._root, window)

    def write(self, windows: Sequence[Window]) -> Counter[str]:
        """One Spark job: read every stream of ``windows``, overwrite exactly their
        partitions; returns ``rows:<generation>``, ``queries`` and ``retries``."""
        spark = self._spark
        tasks = self._fanout.tasks(spark, windows)
        log.info(
            "%s: %d windows, %d streams, %d tasks over %d replicas",
            self._job.log_table.table,
            len(windows),
            sum(len(reads) for _, reads in tasks),
            len(tasks),
            len({replica for replica, _ in tasks}),
        )
        counters = counter_accumulator(spark)
        # Runtime SQL settings, also on a session someone else created.
        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        spark.conf.set("spark.sql.maxConcurrentOutputFileWriters", str(CONCURRENT_WRITERS))
        task = partial(read_changes, self._job, counters)
        rows, broadcast = fan_out(spark, tasks, task, arrow_struct(self._job.schema))
        try:
            (
                rows.write.mode("overwrite")
                .option("partitionOverwriteMode", "dynamic")
                .partitionBy(*PARTITION_COLUMNS)
                .parquet(str(self._root))
            )
        finally:
            broadcast.unpersist()
        result: Counter[str] = counters.value
        return result

    def dataset(self) -> DataFrame:
        """The table's rows as Spark reads them, partition values typed as written
        (window and generation labels stay text)."""
        from pyspark.sql import functions as F

        spark = self._spark
        key = "spark.sql.sources.partitionColumnTypeInference.enabled"
        before = spark.conf.get(key)
        spark.conf.set(key, "false")
        try:
            frame = spark.read.option("basePath", str(self._root)).parquet(str(self._root))
        finally:
            spark.conf.set(key, before or "true")
        return frame.withColumn("bucket", F.col("bucket").cast("int"))
