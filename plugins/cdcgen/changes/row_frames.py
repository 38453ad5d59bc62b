"""The frames the row checks run on: the extracted rows shaped for the row expectations,
and the source's per-stream counts against the lake's.

* :func:`change_rows_frame`: one row per change with its window and generation bounds
  and its expected stream (:class:`~cdcgen.core.expected_streams.GenerationMapper`,
  applied in Spark tasks);
* :func:`source_counts_frame`: the source's ``COUNT(*)`` per stream and window, one
  query per stream, fanned out over Spark tasks by replica exactly like the
  extraction's reads (the same :class:`~.stream_reads.StreamFanout`);
* :func:`stream_counts_frame`: lake rows against source rows per stream and window.

The suites themselves run elsewhere
(:func:`cdcgen.validation.change_rows.validate_change_frames`); this module only prepares
what they read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from cdcgen.changes.stream_reads import ReaderFactory, StreamFanout, StreamRead
from cdcgen.core.change_batch import (
    BASE_TOKEN,
    BUCKET,
    GENERATION,
    OPERATION_NAME,
    WINDOW,
    WINDOW_COLUMNS,
    WRITE_TIME,
)
from cdcgen.core.expected_streams import GenerationMapper
from cdcgen.core.time import to_micros
from cdcgen.core.windows import Window
from cdcgen.spark_runtime.fanout import fan_out, task_items

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Broadcast
    from pyspark.sql import DataFrame, SparkSession

SOURCE_COUNTS_SCHEMA = (
    "generation string, window string, bucket int, stream_hex string, source_rows long"
)


def _expected_stream_batches(
    mapper: GenerationMapper, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Append ``expected_stream_hex`` to each Arrow batch (a Spark ``mapInArrow`` task)."""
    import pyarrow as pa

    for batch in batches:
        tokens = batch.column(BASE_TOKEN)
        micros = batch.column(WRITE_TIME).cast(pa.int64()).to_numpy(zero_copy_only=False)
        values = tokens.to_numpy(zero_copy_only=False)
        if tokens.null_count:
            values = tokens.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)
        expected = mapper.expected_streams(values, micros)
        yield batch.append_column("expected_stream_hex", pa.array(expected, type=pa.string()))


def _with_expected_stream(mapper: GenerationMapper, frame: DataFrame) -> DataFrame:
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([*frame.schema.fields, StructField("expected_stream_hex", StringType())])
    return frame.mapInArrow(partial(_expected_stream_batches, mapper), schema)


def windows_frame(spark: SparkSession, windows: Sequence[Window], leeway_us: int) -> DataFrame:
    """One row per extracted (generation, window, bucket) with its time bounds."""
    from pyspark.sql import functions as F

    rows = [
        (
            w.generation.label,
            w.label,
            w.bucket,
            to_micros(w.start),
            to_micros(w.end),
            to_micros(w.generation.start) - leeway_us,
            None if w.generation.end is None else to_micros(w.generation.end) + leeway_us,
        )
        for w in windows
    ]
    schema = (
        "generation string, window string, bucket int, start_us long, end_us long, "
        "low_us long, high_us long"
    )
    frame = spark.createDataFrame(rows, schema)
    return frame.select(
        GENERATION,
        WINDOW,
        BUCKET,
        F.timestamp_micros("start_us").alias("window_start"),
        F.timestamp_micros("end_us").alias("window_end"),
        F.timestamp_micros("low_us").alias("generation_low"),
        F.timestamp_micros("high_us").alias("generation_high"),
    )


def change_rows_frame(
    lake: DataFrame,
    windows: DataFrame,
    mapper: GenerationMapper,
    partition_key: Sequence[str],
) -> DataFrame:
    """The rows of the given windows, shaped for the row expectations."""
    from pyspark.sql import functions as F

    key = F.to_json(F.struct(*(F.col(f"`{name}`") for name in partition_key)))
    rows = lake.join(F.broadcast(windows), list(WINDOW_COLUMNS), "inner").select(
        F.lower(F.hex(F.col("`cdc$stream_id`"))).alias("stream_hex"),
        F.col("`cdc$time`").alias("cdc_time"),
        F.col("`cdc$batch_seq_no`").alias("batch_seq_no"),
        F.col("`cdc$end_of_batch`").alias("end_of_batch"),
        F.col("`cdc$operation`").alias("operation"),
        OPERATION_NAME,
        WRITE_TIME,
        BASE_TOKEN,
        key.alias("base_key"),
        GENERATION,
        WINDOW,
        BUCKET,
        "window_start",
        "window_end",
        "generation_low",
        "generation_high",
    )
    return _with_expected_stream(mapper, rows)


def _count_task(
    readers: ReaderFactory,
    tasks: Broadcast[list[list[Any]]],
    batches: Iterable[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """A Spark task: ``COUNT(*)`` of each of its streams' windows on the source."""
    import pyarrow as pa

    reader = readers()
    out: dict[str, list[Any]] = {
        GENERATION: [],
        WINDOW: [],
        BUCKET: [],
        "stream_hex": [],
        "source_rows": [],
    }
    read: StreamRead
    for read in task_items(tasks, batches):
        out[GENERATION].append(read.generation)
        out[WINDOW].append(read.window)
        out[BUCKET].append(read.bucket)
        out["stream_hex"].append(read.stream.hex())
        out["source_rows"].append(reader.count(read.stream, read.start, read.end))
    yield pa.RecordBatch.from_pydict(
        out,
        schema=pa.schema(
            [
                (GENERATION, pa.string()),
                (WINDOW, pa.string()),
                (BUCKET, pa.int32()),
                ("stream_hex", pa.string()),
                ("source_rows", pa.int64()),
            ]
        ),
    )


def source_counts_frame(
    spark: SparkSession, fanout: StreamFanout, windows: Sequence[Window]
) -> DataFrame:
    """Per stream and window, the source's row count: one ``COUNT(*)`` query per stream,
    spread over Spark tasks by replica exactly like the extraction's reads."""
    tasks = fanout.tasks(spark, windows)
    if not tasks:
        return spark.createDataFrame([], SOURCE_COUNTS_SCHEMA)
    counts, _ = fan_out(spark, tasks, partial(_count_task, fanout.readers), SOURCE_COUNTS_SCHEMA)
    # Cached: GX evaluates the frame more than once; the COUNT queries must run once. The
    # broadcast task list stays until the session ends (the frame may be re-evaluated).
    return counts.cache()


def stream_counts_frame(rows: DataFrame, source: DataFrame) -> DataFrame:
    """Lake rows against source rows per (generation, window, bucket, stream)."""
    from pyspark.sql import functions as F

    keys = [*WINDOW_COLUMNS, "stream_hex"]
    lake = rows.groupBy(*keys).agg(F.count(F.lit(1)).alias("lake_rows"))
    return lake.join(source, keys, "full_outer").select(
        *keys,
        F.coalesce("lake_rows", F.lit(0)).alias("lake_rows"),
        F.coalesce("source_rows", F.lit(0)).alias("source_rows"),
    )
