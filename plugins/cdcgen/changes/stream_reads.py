"""A run's unit of work on the source: one stream over one window, one query.

The planner (:func:`cdcgen.core.windows.plan_windows`) decides windows of buckets of
streams; Spark tasks read single streams. :class:`StreamRead` is that single read, small
and picklable, carrying where its rows go in the lake. :class:`StreamFanout` is how a
table's reads spread over Spark tasks (by primary replica, :mod:`cdcgen.spark_runtime.fanout`),
shared by the lake writes and the row checks' source counts, so both query the source
the same way; it is built once, on the Spark driver, by :mod:`cdcgen.changes.job`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdcgen.core.time import MillisBounds, to_millis
from cdcgen.core.windows import Window
from cdcgen.ports import ChangeLogReader
from cdcgen.spark_runtime.fanout import Task, min_tasks, plan_tasks

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Builds a reader inside a Spark task; pickled into the task closure, so it must be a
#: small record (or a test's wrapper of one), never a connected reader.
ReaderFactory = Callable[[], ChangeLogReader]


@dataclass(frozen=True)
class StreamRead(MillisBounds):
    """One query: a stream's window (ms bounds) and where its rows go in the lake."""

    stream: bytes
    start_ms: int
    end_ms: int
    generation: str
    window: str
    bucket: int

    @property
    def placement(self) -> tuple[str, str, int]:
        """``(generation, window, bucket)``: the lake partition its rows belong to."""
        return self.generation, self.window, self.bucket


def stream_reads(windows: Iterable[Window]) -> list[StreamRead]:
    """Every stream of every window as its own read.

    A window's bounds and labels are computed once, not per stream, so the driver does
    not spend its time formatting the same labels again for every stream."""
    reads: list[StreamRead] = []
    for w in windows:
        start_ms, end_ms = to_millis(w.start), to_millis(w.end)
        generation, window, bucket = w.generation.label, w.label, w.bucket
        reads.extend(
            StreamRead(stream.raw, start_ms, end_ms, generation, window, bucket)
            for stream in w.streams
        )
    return reads


@dataclass(frozen=True)
class StreamFanout:
    """How one table's stream reads spread over Spark tasks.

    ``readers`` travels to the tasks; ``replica_of`` (the driver's token map) stays on
    the driver. ``min_tasks`` 0 means twice Spark's default parallelism.
    """

    readers: ReaderFactory
    replica_of: Callable[[bytes], str]
    streams_per_task: int
    min_tasks: int = 0

    def tasks(self, spark: SparkSession, windows: Sequence[Window]) -> list[Task[StreamRead]]:
        """The windows' reads grouped into tasks by primary replica; inside a task, reads
        of the same lake partition are adjacent (their rows reach the same files)."""
        planned = plan_tasks(
            stream_reads(windows),
            lambda read: self.replica_of(read.stream),
            self.streams_per_task,
            min_tasks(spark, self.min_tasks),
        )
        return [(replica, sorted(reads, key=lambda r: r.placement)) for replica, reads in planned]
