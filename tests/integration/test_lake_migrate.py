"""`cdcgen lake migrate`: a Parquet changes lake of earlier versions becomes Delta, whole."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from deltalake import DeltaTable
from lake_files import committed_files, old_generation_partition

from cdcgen.adapters.delta_tables import is_delta
from cdcgen.changes.errors import LayoutError
from cdcgen.changes.layout import CHANGES_DIR, STATS_COLUMNS, list_windows
from cdcgen.cli import main
from cdcgen.core.change_batch import PARTITION_COLUMNS
from cdcgen.core.errors import ExitCode
from cdcgen.core.generation_arrays import build_generation_arrays
from cdcgen.core.ring import Ring
from cdcgen.core.topology import Node
from cdcgen.core.windows import LakeWindow, window_label
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.errors import ArtifactError
from cdcgen.generation_lake.lake_tables import list_artifacts

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytest_plugins = ("conftest_spark",)

START = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


def parquet_lake(spark: SparkSession, root: Path) -> list[tuple[object, ...]]:
    """A table's changes as the Parquet layout of earlier versions wrote them."""
    step = timedelta(minutes=5)
    windows = [(START, START + step), (START + step, START + 2 * step)]
    rows = [
        (bytes([n]), n, "2026-11-22", "20261122T095500.000Z", window_label(*windows[n % 2]), n % 3)
        for n in range(60)
    ]
    frame = spark.createDataFrame(
        rows, "stream_id binary, pk int, date string, generation string, window string, bucket int"
    )
    frame.write.mode("overwrite").partitionBy(*PARTITION_COLUMNS).parquet(str(root))
    return sorted((bytes(r[0]), r[1]) for r in rows)


def test_a_parquet_lake_is_converted_in_place_with_every_row(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / CHANGES_DIR / "shop.orders"
    expected = parquet_lake(spark, root)
    with pytest.raises(LayoutError, match="cdcgen lake migrate"):
        list_windows(root)  # the pipeline refuses to write into it
    nodes = [Node("a", 4, 12, (-(10**18), 10**17)), Node("b", 2, 0, (5 * 10**17,))]
    columns = DescriptionColumns.from_arrays(build_generation_arrays(nodes, random.Random(1)))
    old_generation_partition(tmp_path, columns, 1000, "old", Ring.of_nodes(nodes))
    with pytest.raises(ArtifactError, match="cdcgen lake migrate"):
        list_artifacts(tmp_path)

    assert main(["lake", "migrate", "--lake", str(tmp_path)]) == 0
    generation_line, line = capsys.readouterr().out.splitlines()
    assert json.loads(generation_line) == {
        "generation": "generation_ts=1000",
        "converted": True,
        "version": 1,
        "streams": columns.stream_count,
    }
    (artifact,) = list_artifacts(tmp_path)
    assert artifact.read_description().blob_data == columns.blob_data
    assert json.loads(line) == {
        "table": "shop.orders",
        "converted": True,
        "version": 0,
        "rows": len(expected),
    }
    assert is_delta(root)
    properties = DeltaTable(str(root)).metadata().configuration
    assert properties["delta.dataSkippingStatsColumns"] == STATS_COLUMNS  # as a new table
    read = spark.read.format("delta").load(str(root)).select("stream_id", "pk").collect()
    assert sorted((bytes(r[0]), r[1]) for r in read) == expected
    data_files = sorted(root.glob("date=*/*/*/*/*.parquet"))
    assert committed_files(root) == data_files  # every file kept where it was
    assert {w.bucket for w in list_windows(root)} == {0, 1, 2}
    assert LakeWindow("20261122T095500.000Z", START, START + timedelta(minutes=5), 0) in set(
        list_windows(root)
    )

    # Again: nothing to do, the table is listed as it is.
    assert main(["lake", "migrate", "--lake", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "table": "shop.orders",
        "converted": False,
        "version": 0,
        "rows": len(expected),
    }


def test_migrating_a_lake_without_changes_names_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lake", "migrate", "--lake", str(tmp_path / "nowhere")]) == ExitCode.USAGE
    assert "nowhere does not exist" in capsys.readouterr().err
