"""The frames the row checks run on: the extracted rows shaped for the row expectations,
and the source's per-stream counts.

* :class:`GenerationMapper`: ``(base token, write time) -> expected stream`` over many
  generations at once (vectorized ScyllaDB ``get_stream`` for vnode generations, a
  sorted search over stream tokens for tablets);
* :func:`change_rows_frame`: one row per change with its window and generation bounds
  and its expected stream;
* :func:`source_counts_frame`: the source's ``COUNT(*)`` per stream and window, one query
  per stream spread over Spark tasks exactly like the extraction's reads;
* :func:`validate_extraction`: those frames for everything a run wrote, checked with the
  change suites (:func:`cdcgen.validation.change_rows.validate_change_frames`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.lookup import StreamLookup
from cdcgen.core.tablets import TabletStreamSet
from cdcgen.core.time import to_micros
from cdcgen.core.windows import GenerationSpan, Window
from cdcgen.validation.change_rows import validate_change_frames
from cdcgen.validation.results import ValidationResult

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from cdcgen.changes.extract import ExtractionResult, ReadJob
    from cdcgen.changes.log_table import LogTable
    from cdcgen.changes.settings import ChangesSettings
    from cdcgen.config import PipelineConfig


# --- the generation's mapping, vectorized ---------------------------------------------------


class GenerationMapper:
    """``(base token, write time) -> expected stream`` over many generations at once.

    The generation is the one operating at the write time (the last starting at or
    before it); inside it, ScyllaDB's ``get_stream``. Picklable: numpy arrays only.
    """

    def __init__(self, generations: Sequence[GenerationSpan]) -> None:
        ordered = sorted(generations, key=lambda g: g.start)
        self._starts = np.array([to_micros(g.start) for g in ordered], dtype=np.int64)
        self._tables: list[tuple[str, Any, Any]] = []
        for generation in ordered:
            if isinstance(generation.mapping, TabletStreamSet):
                streams = generation.mapping.streams
                tokens = np.array([s.token for s in streams], dtype=np.int64)
                raw = np.frombuffer(b"".join(s.raw for s in streams), dtype=np.uint8)
                self._tables.append(("tablets", tokens, raw.reshape(-1, 16)))
            else:
                arrays = GenerationArrays.from_description(generation.mapping)
                self._tables.append(("vnodes", arrays, None))

    def expected_streams(self, tokens: np.ndarray, write_micros: np.ndarray) -> list[str | None]:
        """Hex of each row's expected stream; None where no generation or token applies."""
        result: list[str | None] = [None] * len(tokens)
        if not len(tokens) or not len(self._starts):
            return result
        valid = ~np.isnan(tokens) if tokens.dtype.kind == "f" else np.ones(len(tokens), bool)
        token_values = np.where(valid, tokens, 0).astype(np.int64)
        which = np.searchsorted(self._starts, write_micros.astype(np.int64), side="right") - 1
        for index in np.unique(which[valid & (which >= 0)]):
            rows = np.nonzero(valid & (which == index))[0]
            kind, table, raw = self._tables[int(index)]
            if kind == "vnodes":
                lookup = StreamLookup.from_arrays(table)
                found = table.stream_bytes[lookup.stream_indices(token_values[rows])]
                present = np.ones(len(rows), bool)
            else:
                position = np.searchsorted(table, token_values[rows], side="left")
                present = position < len(table)
                found = raw[np.where(present, position, 0)]
            for row, stream, ok in zip(rows, found, present, strict=True):
                result[int(row)] = bytes(stream).hex() if ok else None
        return result


def _expected_stream_batches(
    mapper: GenerationMapper, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Append ``expected_stream_hex`` to each Arrow batch (a Spark ``mapInArrow`` task)."""
    import pyarrow as pa

    for batch in batches:
        tokens = batch.column("base_token")
        micros = batch.column("write_time").cast(pa.int64()).to_numpy(zero_copy_only=False)
        values = tokens.to_numpy(zero_copy_only=False)
        if tokens.null_count:
            values = tokens.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)
        expected = mapper.expected_streams(values, micros)
        yield batch.append_column("expected_stream_hex", pa.array(expected, type=pa.string()))


def _with_expected_stream(mapper: GenerationMapper, frame: DataFrame) -> DataFrame:
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([*frame.schema.fields, StructField("expected_stream_hex", StringType())])
    return frame.mapInArrow(partial(_expected_stream_batches, mapper), schema)


# --- frames -------------------------------------------------------------------------------------


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
        "generation",
        "window",
        "bucket",
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
    rows = lake.join(F.broadcast(windows), ["generation", "window", "bucket"], "inner").select(
        F.lower(F.hex(F.col("`cdc$stream_id`"))).alias("stream_hex"),
        F.col("`cdc$time`").alias("cdc_time"),
        F.col("`cdc$batch_seq_no`").alias("batch_seq_no"),
        F.col("`cdc$end_of_batch`").alias("end_of_batch"),
        F.col("`cdc$operation`").alias("operation"),
        "operation_name",
        "write_time",
        "base_token",
        key.alias("base_key"),
        "generation",
        "window",
        "bucket",
        "window_start",
        "window_end",
        "generation_low",
        "generation_high",
    )
    return _with_expected_stream(mapper, rows)


def _count_task(
    job: ReadJob, tasks: Any, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """A Spark task: ``COUNT(*)`` of each of its streams' windows on the source."""
    import pyarrow as pa

    from cdcgen.changes.extract import task_reads
    from cdcgen.changes.stream_reader import StreamReader, shared_session
    from cdcgen.core.time import from_micros

    reader = StreamReader(shared_session(job.session_key), job.log_table, job.settings)
    out: dict[str, list[Any]] = {
        "generation": [],
        "window": [],
        "bucket": [],
        "stream_hex": [],
        "source_rows": [],
    }
    for read in task_reads(tasks, batches):
        start = from_micros(read.start_ms * 1000)
        end = from_micros(read.end_ms * 1000)
        out["generation"].append(read.generation)
        out["window"].append(read.window)
        out["bucket"].append(read.bucket)
        out["stream_hex"].append(read.stream.hex())
        out["source_rows"].append(reader.count(read.stream, start, end))
    yield pa.RecordBatch.from_pydict(
        out,
        schema=pa.schema(
            [
                ("generation", pa.string()),
                ("window", pa.string()),
                ("bucket", pa.int32()),
                ("stream_hex", pa.string()),
                ("source_rows", pa.int64()),
            ]
        ),
    )


def source_counts_frame(
    spark: SparkSession,
    config: PipelineConfig,
    settings: ChangesSettings,
    log_table: LogTable,
    windows: Sequence[Window],
) -> DataFrame:
    """Per stream and window, the source's row count: one ``COUNT(*)`` query per stream,
    spread over Spark tasks by replica exactly like the extraction's reads."""
    from cdcgen.adapters.cql import connect
    from cdcgen.changes.extract import (
        min_tasks,
        read_job,
        read_tasks,
        replica_lookup,
        task_frame,
    )

    client = connect(config.contact_points, config.port)
    try:
        job = read_job(config, settings, client, log_table)
        tasks = read_tasks(
            windows, replica_lookup(client, log_table), settings, min_tasks(spark, settings)
        )
    finally:
        client.close()
    schema = "generation string, window string, bucket int, stream_hex string, source_rows long"
    if not tasks:
        return spark.createDataFrame([], schema)
    frame, broadcast = task_frame(spark, tasks)
    # Cached: GX evaluates the frame more than once; the COUNT queries must run once.
    return frame.mapInArrow(partial(_count_task, job, broadcast), schema).cache()


def stream_counts_frame(rows: DataFrame, source: DataFrame) -> DataFrame:
    """Lake rows against source rows per (generation, window, bucket, stream)."""
    from pyspark.sql import functions as F

    keys = ["generation", "window", "bucket", "stream_hex"]
    lake = rows.groupBy(*keys).agg(F.count(F.lit(1)).alias("lake_rows"))
    return lake.join(source, keys, "full_outer").select(
        *keys,
        F.coalesce("lake_rows", F.lit(0)).alias("lake_rows"),
        F.coalesce("source_rows", F.lit(0)).alias("source_rows"),
    )


def validate_extraction(
    spark: SparkSession,
    config: PipelineConfig,
    settings: ChangesSettings,
    result: ExtractionResult,
    generations: Sequence[GenerationSpan],
    log_table: LogTable,
    *,
    report_dir: Path | None = None,
    expectations_dir: Path | None = None,
) -> ValidationResult:
    """Check every window ``result`` wrote (what the DAG's validate task calls)."""
    from cdcgen.changes.extract import read_lake
    from cdcgen.reports.records import slug

    target = report_dir or (
        Path(config.report_dir) / "changes" / result.table.qualified / slug(result.run_id)
    )
    windows = list(result.windows)
    leeway_us = int(config.generation_leeway.total_seconds() * 1_000_000)
    if not windows or not any(result.lake_root.rglob("*.parquet")):
        return ValidationResult(
            True, [], target / "index.html", "no window extracted: nothing to check"
        )
    rows = change_rows_frame(
        read_lake(spark, result.lake_root),
        windows_frame(spark, windows, leeway_us),
        GenerationMapper(generations),
        log_table.partition_key,
    )
    counts = None
    if settings.verify_source_counts:
        source = source_counts_frame(spark, config, settings, log_table, windows)
        counts = stream_counts_frame(rows, source)
    return validate_change_frames(
        rows,
        counts,
        report_dir=target,
        run_name=f"{result.table.qualified} {result.run_id}",
        expectations_dir=expectations_dir,
    )
