"""Delta tables on S3 from Spark: the lake's log store commits with a conditional PUT.

Against moto's S3 server (which honours ``If-None-Match`` as S3 does): the log store
refuses to write a version that is already there, whoever wrote it, without touching
it; Spark reads and writes a table that delta-rs also commits to, and a conflicting
commit surfaces as Delta's conflict, never as a silently replaced version.
"""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa
import pytest

from cdcgen.adapters.delta_tables import delta_table
from cdcgen.adapters.lake_store import LakeLocation
from cdcgen.changes.layout import read_delta
from cdcgen.spark_runtime.log_store import LOG_STORE_CLASS

pytest_plugins = ("conftest_spark",)
pytestmark = pytest.mark.integration


def test_spark_uses_the_conditional_log_store_for_s3(spark: Any) -> None:
    assert spark.conf.get("spark.delta.logStore.s3a.impl") == LOG_STORE_CLASS


def _log_store(spark: Any) -> tuple[Any, Any]:
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    return spark._jvm.cdcgen.delta.ConditionalPutLogStore(conf), conf


def _write(spark: Any, store: Any, conf: Any, path: str, lines: list[str]) -> str:
    """Write a commit file through the log store; the Java exception's class if refused."""
    jvm = spark._jvm
    target = jvm.org.apache.hadoop.fs.Path(path)
    actions = jvm.java.util.ArrayList()
    for line in lines:
        actions.add(line)
    try:
        store.write(target, actions.iterator(), False, conf)
    except Exception as exc:  # py4j's Py4JJavaError
        return str(exc.java_exception.getClass().getName())  # type: ignore[attr-defined]
    return "written"


def test_a_version_already_written_is_refused_and_kept(spark: Any, s3_lake: LakeLocation) -> None:
    store, conf = _log_store(spark)
    commit = s3_lake / "t" / "_delta_log" / f"{7:020d}.json"
    assert _write(spark, store, conf, commit.spark_uri, ['{"first": 1}']) == "written"
    refused = _write(spark, store, conf, commit.spark_uri, ['{"second": 2}'])
    assert refused == "java.nio.file.FileAlreadyExistsException"  # what Delta retries on
    assert commit.read_bytes() == b'{"first": 1}\n'


def test_of_writers_racing_for_one_version_exactly_one_wins(
    spark: Any, s3_lake: LakeLocation
) -> None:
    store, conf = _log_store(spark)
    commit = s3_lake / "race" / "_delta_log" / f"{3:020d}.json"
    outcomes: dict[int, str] = {}
    start = threading.Barrier(4)

    def writer(number: int) -> None:
        start.wait()
        outcomes[number] = _write(spark, store, conf, commit.spark_uri, [f'{{"w": {number}}}'])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    winners = [n for n, outcome in outcomes.items() if outcome == "written"]
    assert len(outcomes) == 4 and len(winners) == 1, outcomes
    assert set(outcomes.values()) == {"written", "java.nio.file.FileAlreadyExistsException"}
    assert commit.read_bytes() == f'{{"w": {winners[0]}}}\n'.encode()


def test_spark_and_delta_rs_commit_to_one_table_on_s3(spark: Any, s3_lake: LakeLocation) -> None:
    """Both engines append in turn; every commit is kept, each reads what the other wrote."""
    from deltalake import write_deltalake

    table = s3_lake / "changes" / "shop.orders"
    frame = spark.createDataFrame([(1, "a"), (2, "b")], "pk INT, v STRING")
    frame.write.format("delta").mode("append").save(table.spark_uri)
    rows = pa.table({"pk": pa.array([3], pa.int32()), "v": ["c"]})
    write_deltalake(table.uri, rows, mode="append", storage_options=table.storage_options())
    spark.createDataFrame([(4, "d")], "pk INT, v STRING").write.format("delta").mode("append").save(
        table.spark_uri
    )
    by_spark = sorted(r.pk for r in spark.read.format("delta").load(table.spark_uri).collect())
    by_delta_rs = sorted(delta_table(table).to_pyarrow_dataset().to_table()["pk"].to_pylist())
    assert by_spark == by_delta_rs == [1, 2, 3, 4]
    assert delta_table(table).version() == 2
    assert read_delta(table, columns=[]).num_rows == 4  # pyarrow on S3 too
