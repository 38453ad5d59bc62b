"""The range strategy's unit of work: one token range of the ring over a time slice.

Where the per-stream strategy (:mod:`.stream_reads`) sends one query per stream per
window, this one scans the ring in token ranges restricted to the job's time span (the
earliest window start to the latest window end) and lets each Spark task place the rows
it reads (:class:`~.window_index.WindowIndex`). The ranges come from the cluster's token
map, cut at the ring's tokens, so each has one primary replica. When the lake's buckets
are slices of the ring (:mod:`cdcgen.core.lake_buckets`) each task scans an equal share
of one slice, so it writes one bucket; otherwise tasks group ranges by replica exactly
like stream reads (:func:`cdcgen.spark_runtime.fanout.plan_tasks`). Built once on the Spark
driver by :mod:`cdcgen.changes.job`; the rule that picks a strategy per job is
:func:`cdcgen.core.read_strategy.choose_read`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdcgen.changes.window_index import WindowIndex
from cdcgen.core.read_strategy import ReadStrategy
from cdcgen.core.time import MillisBounds
from cdcgen.core.token_ranges import TokenRange
from cdcgen.spark_runtime.fanout import Task, min_tasks, plan_tasks

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: ``at_least -> [(range, primary replica)]``: the driver's view of the ring.
RingRanges = Callable[[int], Sequence[tuple[TokenRange, str]]]

#: Spark tasks per task slot (``min_tasks``), each scanning one or a few ranges: the raw
#: scan of ``benchmarks/bench_changes.py`` runs markedly faster as many tasks per slot than
#: as a few: a task's Python worker converts rows while the JVM writes another
#: task's, and smaller tasks balance better.
TASKS_PER_SLOT = 4


@dataclass(frozen=True)
class RangeRead(MillisBounds):
    """One scan: tokens ``(low, high]``, ``start_ms <= cdc$time < end_ms``, its replica."""

    low: int
    high: int
    start_ms: int
    end_ms: int
    replica: str


@dataclass(frozen=True)
class RangeFanout:
    """How one table's range scans spread over Spark tasks, and when to use them.

    ``strategy`` and ``ranges_from`` are the settings of the choice rule; ``ring`` stays
    on the driver; ``min_tasks`` 0 means twice Spark's default parallelism."""

    ring: RingRanges
    strategy: ReadStrategy = ReadStrategy.AUTO
    ranges_from: int = 1024
    min_tasks: int = 0

    def tasks(
        self,
        spark: SparkSession,
        index: WindowIndex,
        buckets: Sequence[TokenRange] | None = None,
    ) -> list[Task[RangeRead]]:
        """The ring's ranges over ``index``'s time span, grouped into tasks.

        With ``buckets`` (the lake's buckets as slices of the ring,
        :attr:`~cdcgen.core.lake_buckets.LakeBuckets.ring_slices`) each task scans an
        equal share of one slice, so it writes one bucket's files (one per window).
        Without, tasks group ranges by primary replica."""
        tasks = min_tasks(spark, self.min_tasks) * TASKS_PER_SLOT
        low_ms, high_ms = index.low_us // 1000, index.high_us // 1000
        if buckets is None:
            reads = [
                RangeRead(r.low, r.high, low_ms, high_ms, replica)
                for r, replica in self.ring(tasks)
            ]
            return plan_tasks(reads, lambda read: read.replica, max(1, len(reads)), tasks)
        per_bucket = -(-tasks // len(buckets))
        shares = [share for bucket in buckets for share in bucket.split(per_bucket)]
        ends = [share.high for share in shares[:-1]]
        grouped: list[list[RangeRead]] = [[] for _ in shares]
        for whole, replica in self.ring(1):
            for part in whole.cut(ends):
                read = RangeRead(part.low, part.high, low_ms, high_ms, replica)
                grouped[bisect_left(ends, part.high)].append(read)
        return [(f"ring share {n}", reads) for n, reads in enumerate(grouped) if reads]
