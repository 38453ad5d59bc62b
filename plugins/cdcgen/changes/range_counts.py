"""The row checks' source counts by token-range scans, for runs of many streams.

The count suite compares, per stream and window, the rows in the lake with the rows in
the source. Counting one ``COUNT(*)`` query per stream (:func:`.row_frames.source_counts_frame`)
costs what the per-stream extraction cost: a round trip for every one of them. When
the extraction itself scanned ranges (the same rule, :func:`cdcgen.core.read_strategy.choose_read`),
the counts do too: each Spark task scans its token ranges for the stream and time columns
alone, places each row with the run's :class:`~.window_index.WindowIndex` (exactly as the
extraction placed them) and counts per placement and stream.

Streams with no row in the source get no count row; the comparison
(:func:`.row_frames.stream_counts_frame`, a full outer join whose absent sides count 0)
gives them the same verdict as a zero count would.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from cdcgen.changes.range_reads import RangeFanout, RangeRead
from cdcgen.changes.row_frames import SOURCE_COUNTS_SCHEMA
from cdcgen.changes.stream_reads import ReaderFactory
from cdcgen.changes.window_index import WindowIndex, stream_keys
from cdcgen.core.cdc_log import micros_of_timeuuids, timeuuid_bytes
from cdcgen.core.change_batch import BUCKET, GENERATION, WINDOW, WINDOW_COLUMNS
from cdcgen.spark_runtime.fanout import fan_out, task_items

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Broadcast
    from pyspark.sql import DataFrame, SparkSession


def _range_count_task(
    readers: ReaderFactory,
    index: Broadcast[WindowIndex],
    tasks: Broadcast[list[list[Any]]],
    batches: Iterable[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """A Spark task: rows per (placement, stream) in its token ranges."""
    import pyarrow as pa

    reader = readers()
    windows = index.value
    codes: list[np.ndarray[Any, Any]] = []
    streams: list[np.ndarray[Any, Any]] = []
    read: RangeRead
    for read in task_items(tasks, batches):
        for page in reader.range_pages(
            read.low, read.high, read.start, read.end, read.replica, keys_only=True
        ):
            if not page:
                continue
            keys = stream_keys([bytes(row[0]) for row in page])
            times = micros_of_timeuuids(timeuuid_bytes([row[1] for row in page]))
            code = windows.assign(keys, times)
            keep = code >= 0
            codes.append(code[keep])
            streams.append(keys[keep])
    out: dict[str, list[Any]] = {k: [] for k in WINDOW_COLUMNS}
    out |= {"stream_hex": [], "source_rows": []}
    if codes:
        # One row per (placement, stream): unique over the pair, as 24 raw bytes.
        code = np.concatenate(codes).astype(">i8")
        pairs = np.frombuffer(
            np.hstack(
                [
                    code.view(np.uint8).reshape(-1, 8),
                    np.concatenate(streams).view(np.uint8).reshape(-1, 16),
                ]
            ).tobytes(),
            dtype="V24",
        )
        distinct, counts = np.unique(pairs, return_counts=True)
        for pair, count in zip(distinct.tolist(), counts.tolist(), strict=True):
            generation, window, bucket = windows.placements[int.from_bytes(pair[:8], "big")]
            out[GENERATION].append(generation)
            out[WINDOW].append(window)
            out[BUCKET].append(bucket)
            out["stream_hex"].append(pair[8:].hex())
            out["source_rows"].append(count)
    yield pa.RecordBatch.from_pydict(out, schema=_schema())


def _schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            (GENERATION, pa.string()),
            (WINDOW, pa.string()),
            (BUCKET, pa.int32()),
            ("stream_hex", pa.string()),
            ("source_rows", pa.int64()),
        ]
    )


def range_counts_frame(
    spark: SparkSession, readers: ReaderFactory, ranges: RangeFanout, index: WindowIndex
) -> DataFrame:
    """Per stream and window with rows, the source's row count, by token-range scans."""
    tasks = ranges.tasks(spark, index)
    shared = spark.sparkContext.broadcast(index)
    task = partial(_range_count_task, readers, shared)
    counts, _ = fan_out(spark, tasks, task, SOURCE_COUNTS_SCHEMA)
    # Cached, like the per-stream counts: GX evaluates the frame more than once.
    return counts.cache()
