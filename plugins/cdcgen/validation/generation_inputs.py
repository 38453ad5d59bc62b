"""A generation's batches in the form each flag engine reads them.

The streams are either an extracted generation (the Parquet files of the table version
validation reads) or an Arrow table (a description flattened in memory, for the command
line); the previous generation's stream IDs are an extracted generation or an Arrow
table of IDs. SQLite gets Arrow tables (read with pyarrow, only the columns the rules
use); Spark gets DataFrames (those files read by Spark itself). The entries always
come from the description.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import pyarrow as pa

from cdcgen.core.ring import Ring
from cdcgen.extract.description_columns import DescriptionColumns
from cdcgen.extract.description_json import read_description_file
from cdcgen.extract.lake import GenerationArtifact
from cdcgen.extract.streams_table import entries_table, stream_id_table
from cdcgen.validation.generation_rules import SOURCE_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Column of the entries batch holding the source reader's objection (null: none).
SOURCE_PROBLEM_COLUMN = "source_problem"

#: Streams or stream IDs: an extracted generation (the files of its version), or the
#: rows themselves.
Rows: TypeAlias = GenerationArtifact | pa.Table


@dataclass(frozen=True)
class GenerationBatches:
    """One generation's inputs: its streams, entries, previous IDs, ring and layout, and
    where the Spark engine may put files its executors read (the lake, in a temporary
    hidden directory; None: the system's temporary directory)."""

    streams: Rows
    entries: Callable[[], pa.Table]  # read when needed: it overlaps the Spark pass
    previous: Rows | None
    ring: Ring | None
    layout: str
    scratch: Path | None


def entries_batch(
    columns: DescriptionColumns, ring: Ring | None, source_problem: str | None
) -> pa.Table:
    """One row per entry; the source reader's verdict travels as a column, so a GX
    expectation (and so Data Docs) reports it beside the checks that show what is wrong."""
    table = entries_table(columns, ring)
    problem = pa.array([source_problem] * table.num_rows, pa.string())
    return table.append_column(SOURCE_PROBLEM_COLUMN, problem)


def previous_rows(
    previous: GenerationArtifact | Path | DescriptionColumns | None,
) -> Rows | None:
    """The previous generation's IDs: an extracted one as is, a description (columns or
    a JSON file) as IDs."""
    if previous is None or isinstance(previous, GenerationArtifact):
        return previous
    if isinstance(previous, DescriptionColumns):
        columns = previous
    else:
        columns = read_description_file(previous)
    ids: pa.Table = stream_id_table(columns)
    return ids


def as_arrow(rows: Rows, columns: tuple[str, ...]) -> pa.Table:
    """``columns`` of the rows, for SQLite; an extraction's files are read with pyarrow."""
    if isinstance(rows, pa.Table):
        return rows.select(list(columns))
    import pyarrow.parquet as pq

    if not rows.files:
        return pq.ParquetDataset([]).read(columns=list(columns))
    filesystem = rows.files[0].arrow()[0]
    files = [path.arrow()[1] for path in rows.files]
    return pq.ParquetDataset(files, filesystem=filesystem).read(columns=list(columns))


def streams_arrow(rows: Rows) -> pa.Table:
    """The stream columns the rules read."""
    return as_arrow(rows, SOURCE_COLUMNS["streams"])


def as_frame(spark: SparkSession, rows: Rows) -> DataFrame:
    """The rows as a DataFrame; a partition is read by Spark (it is the artifact)."""
    from cdcgen.extract.spark_extract import read_streams

    if isinstance(rows, pa.Table):
        return spark.createDataFrame(rows)
    return read_streams(spark, rows)
