"""Which engine flags a generation's streams, and the Spark one.

The flag pass (:mod:`.flag_sql`) reads every stream once; what it keeps is small. Two
engines run the same query:

* ``sql``: SQLite in this process (:func:`cdcgen.validation.sqlite_batches.flag_streams`).
  Nothing to start, so a description of a few thousand streams is checked quickly;
  but it loads every row through Python, which at a million streams costs
  more than Spark's scan.
* ``spark``: a Spark session (:func:`flag_on_spark`) reads the lake partition itself,
  column-pruned, and returns only the offending rows as Arrow.

:func:`choose_engine` decides from the setting (``CDCGEN_VALIDATION_ENGINE``) and the
stream count (``CDCGEN_VALIDATION_SQL_MAX_STREAMS``). Either way GX then checks the
flagged rows in SQLite, so the verdicts and reports do not depend on the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from cdcgen.validation import flag_sql
from cdcgen.validation.generation_rules import RowRule

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

Engine = Literal["sql", "spark"]
ENGINES: tuple[Engine, ...] = ("sql", "spark")


def choose_engine(setting: str, streams: int, sql_max_streams: int) -> Engine:
    """``setting`` itself, or for ``auto`` SQLite up to ``sql_max_streams`` streams."""
    if setting == "auto":
        return "sql" if streams <= sql_max_streams else "spark"
    if setting not in ENGINES:
        raise ValueError(f"unknown validation engine {setting!r}; known: auto, sql, spark")
    return "sql" if setting == "sql" else "spark"


def flag_on_spark(
    spark: SparkSession,
    streams: DataFrame,
    counts: pa.Table | None,
    rules: Sequence[RowRule],
    scratch: Path,
) -> pa.Table:
    """The offending streams with every flag, computed by Spark in one query.

    The inputs are exposed to the query as temporary views, dropped afterwards. The
    counts reach Spark as a Parquet file in ``scratch`` (a directory Spark's executors
    can read, like the lake): usually there are none (``None``: no join at all), but they
    can be as many as the streams when a generation repeats the previous one, too many
    to hand over through the driver.
    """
    import pyarrow.parquet as pq

    views = [flag_sql.STREAMS_SOURCE]
    streams.createOrReplaceTempView(flag_sql.STREAMS_SOURCE)
    if counts is not None:
        path = scratch / "stream_id_counts.parquet"
        pq.write_table(counts, path)
        spark.read.parquet(str(path)).createOrReplaceTempView(flag_sql.COUNTS_SOURCE)
        views.append(flag_sql.COUNTS_SOURCE)
    try:
        return spark.sql(flag_sql.streams_query(rules, counted=counts is not None)).toArrow()
    finally:
        for view in views:
            spark.catalog.dropTempView(view)
