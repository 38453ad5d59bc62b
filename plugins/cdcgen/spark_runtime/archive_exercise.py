"""What the driver's class archive is written from: a session doing what the jobs do.

Run by :func:`cdcgen.spark_runtime.class_archive.build_archive` as
``python -m cdcgen.spark_runtime.archive_exercise JAVA_OPTIONS``, once with the options that
write the archive and once with those that must map it.
"""

from __future__ import annotations

import sys
import tempfile


def exercise(java_options: str) -> None:
    """A local session doing what the jobs do (Delta and Parquet reads and writes, SQL,
    Arrow both ways, a Python map), so the archive holds the classes they load."""
    import pyarrow as pa

    from cdcgen.spark_runtime.class_archive import DRIVER_OPTIONS
    from cdcgen.spark_runtime.session import JobKind, job_conf, spark_session

    conf = {**job_conf(JobKind.CHANGES_EXTRACT), DRIVER_OPTIONS: java_options}
    spark = spark_session("cdcgen-class-archive", conf)
    with tempfile.TemporaryDirectory(prefix="cdcgen-class-archive-") as scratch:
        frame = spark.range(20_000).selectExpr(
            "id",
            "cast(id % 97 as int) AS bucket",
            "unhex(hex(id)) AS blob",
            "current_timestamp() AS at",
        )
        frame.write.format("delta").partitionBy("bucket").save(f"{scratch}/delta")
        delta = spark.read.format("delta").load(f"{scratch}/delta")
        delta.groupBy("bucket").count().toArrow()
        frame.write.parquet(f"{scratch}/parquet")
        spark.read.parquet(f"{scratch}/parquet").count()
        spark.createDataFrame(pa.table({"k": [1, 2, 3]})).createOrReplaceTempView("small")
        spark.sql("SELECT k, count(*) AS n FROM small GROUP BY k ORDER BY k").toArrow()
        frame.mapInArrow(lambda batches: batches, frame.schema).count()
    spark.stop()


if __name__ == "__main__":
    exercise(sys.argv[1])
