"""The Spark side of extraction: an extracted generation as DataFrames.

Sessions come from :mod:`cdcgen.spark_runtime.session` (one configuration per job kind).

With a large generation (``benchmarks/bench_generation_pipeline.py`` measures one), writing
the flattened Arrow table with pyarrow and reading it back with Spark is far quicker than
``spark.createDataFrame(arrow_table).write.parquet`` (the table is shipped to the JVM in
small Arrow batches, one task each). So pyarrow writes the Parquet files of a generation's
commit (:func:`cdcgen.generation_lake.generation_writes.write_generation`) and Spark reads
exactly the files of that version: the DataFrame validation runs on is the artifact itself,
not a copy of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from cdcgen.adapters.lake_store import LakeRoot
from cdcgen.core.ring import Ring
from cdcgen.core.topology import Node
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.errors import ArtifactError
from cdcgen.generation_lake.generation_writes import write_generation
from cdcgen.generation_lake.lake_tables import GenerationArtifact
from cdcgen.generation_lake.streams_table import STREAMS_SCHEMA

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


def read_streams(spark: SparkSession, artifact: GenerationArtifact) -> DataFrame:
    """The one-row-per-stream DataFrame of an extracted generation: the files its
    version of the table holds (resolved by delta-rs, so Spark has no log to replay)."""
    files = [path.spark_uri for path in artifact.files]
    return spark.read.schema(_spark_schema(STREAMS_SCHEMA)).parquet(*files)


@dataclass(frozen=True)
class ExtractResult:
    artifact: GenerationArtifact
    rows_read_back: int


def extract_generation(
    spark: SparkSession,
    lake: LakeRoot,
    columns: DescriptionColumns,
    timestamp: datetime,
    generation_id: str,
    *,
    nodes: Sequence[Node] | Ring | None = None,
    table: str | None = None,
    source_problem: str | None = None,
) -> ExtractResult:
    """Write the partition, then have Spark read it back in full and count the rows.

    The read-back proves the artifact is complete and readable by the engine that will
    validate it before anything downstream trusts it.
    """
    artifact = write_generation(
        lake,
        columns,
        timestamp,
        generation_id,
        nodes=nodes,
        table=table,
        source_problem=source_problem,
    )
    rows = read_streams(spark, artifact).count()
    if rows != artifact.stream_count:
        raise ArtifactError(
            f"{artifact.label} (version {artifact.version}): Spark read {rows} stream "
            f"rows, the description has {artifact.stream_count}"
        )
    return ExtractResult(artifact, rows)


def _spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema matching an Arrow schema (so reads never infer, and fail loudly)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)
