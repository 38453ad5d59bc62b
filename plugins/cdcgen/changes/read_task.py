"""The Spark task of an extraction: read its streams, one query each, yield lake rows.

Runs on a Python worker. It builds its reader from the factory in its closure (the
worker's shared, stream-routed session), reads each of its streams page by page, drops
rows already seen in the same stream (upstream delivery is at least once, the lake
exactly once) and yields Arrow batches of the lake schema (:mod:`.columns`) in the order
read: per stream, ``cdc$time`` then ``batch_seq_no``, which is each key's order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.errors import TerminalReadError
from cdcgen.changes.columns import LakeBatchBuilder, Placement, column_specs, lake_schema
from cdcgen.changes.stream_reads import ReaderFactory, StreamRead
from cdcgen.core.log_table import LogTable
from cdcgen.ports import ChangeLogReader
from cdcgen.spark_runtime.fanout import task_items
from cdcgen.spark_runtime.worker_heap import freeze_once

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Accumulator, Broadcast


@dataclass(frozen=True)
class ReadJob:
    """What every read task of a table needs, pickled once into the Spark closure."""

    readers: ReaderFactory
    log_table: LogTable
    schema: pa.Schema  # the lake rows', fixed on the driver before the job starts
    batch_rows: int
    text_columns: frozenset[str] = frozenset()  # kept as text (:func:`.columns.text_columns`)


def batch_builder(job: ReadJob, reader: ChangeLogReader) -> LakeBatchBuilder:
    """The task's Arrow builder; fails if the log's columns moved since the driver planned."""
    specs = column_specs(reader.column_metadata, job.text_columns)
    if lake_schema(specs) != job.schema:
        raise TerminalReadError(
            f"{job.log_table.table.qualified_log} changed schema during the run; re-run it"
        )
    return LakeBatchBuilder(specs, job.log_table.partition_key, reader.protocol_version, job.schema)


def read_changes(
    job: ReadJob,
    counters: Accumulator[Counter[str]],
    tasks: Broadcast[list[list[Any]]],
    batches: Iterable[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """A Spark task (``mapInArrow``): this task's streams as lake rows.

    Adds ``rows:<generation>``, ``queries`` and ``retries`` to ``counters``.
    """
    reader = job.readers()
    builder = batch_builder(job, reader)
    freeze_once()  # the worker's long-lived heap, out of the collector's walks
    segments: list[tuple[list[Any], Placement]] = []
    buffered = 0
    written: Counter[str] = Counter()
    read: StreamRead
    for read in task_items(tasks, batches):
        placement = Placement(read.generation, read.window, read.bucket)
        seen: set[tuple[Any, Any]] = set()
        for page in reader.pages(read.stream, read.start, read.end):
            rows = builder.unique_rows(page, seen)
            if rows:
                segments.append((rows, placement))
                buffered += len(rows)
                written[f"rows:{read.generation}"] += len(rows)
            if buffered >= job.batch_rows:
                yield builder.to_batch(segments)
                segments, buffered = [], 0
    if segments:
        yield builder.to_batch(segments)
    written.update(reader.counters())
    counters.add(written)
