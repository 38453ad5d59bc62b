"""The Spark task of the range strategy: scan token ranges, place each row, yield lake rows.

Runs on a Python worker, like :func:`~.read_task.read_changes`, and yields the same
Arrow batches (same builder, same schema); only where rows come from differs. Each page
of a scan is placed at once (:meth:`~.window_index.WindowIndex.assign`, vectorised);
rows of no planned read are dropped before any conversion. A scan returns each primary
key once (a retried page resumes from the same paging state), so no row repeats, and a
stream's rows arrive together in clustering order, which is each key's order in the lake.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import compress
from typing import TYPE_CHECKING, Any

import numpy as np

from cdcgen.changes.range_reads import RangeRead
from cdcgen.changes.read_task import ReadJob, batch_builder
from cdcgen.changes.window_index import WindowIndex, stream_keys
from cdcgen.core.cdc_log import micros_of_timeuuids, timeuuid_bytes
from cdcgen.spark_runtime.fanout import task_items
from cdcgen.spark_runtime.worker_heap import freeze_once

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Accumulator, Broadcast


def read_ranges(
    job: ReadJob,
    counters: Accumulator[Counter[str]],
    index: Broadcast[WindowIndex],
    tasks: Broadcast[list[list[Any]]],
    batches: Iterable[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """A Spark task (``mapInArrow``): this task's token ranges as placed lake rows.

    Adds ``rows:<generation>``, ``queries``, ``retries`` and ``rows_dropped`` to ``counters``.
    """
    import pyarrow as pa

    reader = job.readers()
    builder = batch_builder(job, reader)
    freeze_once()  # the worker's long-lived heap, out of the collector's walks
    windows = index.value
    generations = pa.array([p[0] for p in windows.placements], pa.string())
    labels = pa.array([p[1] for p in windows.placements], pa.string())
    buckets = pa.array([p[2] for p in windows.placements], pa.int32())
    rows: list[Any] = []
    times: list[np.ndarray[Any, Any]] = []  # cdc$time bytes, page by page
    codes: list[np.ndarray[Any, Any]] = []
    written: Counter[str] = Counter()
    placed = np.zeros(len(windows.placements), dtype=np.int64)

    def flush() -> pa.RecordBatch:
        code = pa.array(np.concatenate(codes))
        batch = builder.batch(
            builder.columns(rows),
            np.concatenate(times),
            (generations.take(code), labels.take(code), buckets.take(code)),
        )
        rows.clear()
        times.clear()
        codes.clear()
        return batch

    read: RangeRead
    for read in task_items(tasks, batches):
        pages = reader.range_pages(read.low, read.high, read.start, read.end, read.replica)
        for page in pages:
            if not page:
                continue
            raw = timeuuid_bytes([row[builder.time_column] for row in page])
            streams = stream_keys([row[builder.stream_column] for row in page])
            code = windows.assign(streams, micros_of_timeuuids(raw))
            keep = code >= 0
            kept = int(keep.sum())
            written["rows_dropped"] += len(page) - kept
            if kept < len(page):
                page, raw, code = list(compress(page, keep)), raw[keep], code[keep]
            if kept:
                rows.extend(page)
                times.append(raw)
                codes.append(code)
                placed += np.bincount(code, minlength=len(placed))
            if len(rows) >= job.batch_rows:
                yield flush()
    if rows:
        yield flush()
    for number, (generation, _, _) in enumerate(windows.placements):
        if placed[number]:
            written[f"rows:{generation}"] += int(placed[number])
    written.update(reader.counters())
    counters.add(written)
