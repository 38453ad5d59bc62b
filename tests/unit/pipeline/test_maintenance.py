"""Vacuuming the lake: files replaced by a commit go once past the retention, not before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake

from cdcgen.adapters.lake_store import LakeLocation
from cdcgen.changes.layout import CHANGES_DIR, LAYOUT_FILE
from cdcgen.config import PipelineConfig
from cdcgen.pipeline.maintenance import LAKE_RETENTION, vacuum_lake


def _rows(pk: int) -> pa.Table:
    return pa.table({"pk": pa.array([pk], pa.int64()), "bucket": pa.array([0], pa.int32())})


def _pks(root: Path, version: int | None = None) -> list[int]:
    files = [urlparse(uri).path for uri in DeltaTable(str(root), version=version).file_uris()]
    return sorted(pq.read_table(files, columns=["pk"])["pk"].to_pylist())


def test_replaced_files_go_only_past_the_retention(tmp_path: Path) -> None:
    config = PipelineConfig(lake_path=tmp_path / "lake", report_dir=tmp_path / "reports")
    root = Path(config.lake_path) / CHANGES_DIR / "shop.orders"
    write_deltalake(str(root), _rows(1), partition_by=["bucket"])
    write_deltalake(str(root), _rows(2), partition_by=["bucket"], mode="overwrite")
    (root / LAYOUT_FILE).write_text("{}")
    parquet_lake = Path(config.lake_path) / CHANGES_DIR / "shop.old" / "date=2026-11-22"
    parquet_lake.mkdir(parents=True)

    kept = vacuum_lake(config)  # the replaced file is younger than a week
    assert kept.model_dump(mode="json") == {
        "retention_hours": LAKE_RETENTION.total_seconds() // 3600,
        "removed_files": {"shop.orders": 0},
        "not_delta": ["shop.old"],
    }
    assert _pks(root, version=0) == [1]

    done = vacuum_lake(config, retention=timedelta(0))
    assert done.removed_files == {"shop.orders": 1}
    assert _pks(root) == [2]
    assert (root / LAYOUT_FILE).is_file()  # the layout record is not a data file
    vacuum_lake(config, retention=timedelta(0))  # again: nothing more goes
    assert _pks(root) == [2]
    assert len(list(root.glob("bucket=0/*.parquet"))) == 1


def test_the_generations_table_is_vacuumed_and_its_documents_kept(
    lake_root: LakeLocation, tmp_path: Path
) -> None:
    """On a local lake and on S3."""
    import random

    from cdcgen.core.generation_arrays import build_generation_arrays
    from cdcgen.core.topology import Node
    from cdcgen.generation_lake.description_columns import DescriptionColumns
    from cdcgen.generation_lake.generation_writes import write_generation
    from cdcgen.generation_lake.lake_tables import read_artifact

    config = PipelineConfig(lake_path=lake_root, report_dir=tmp_path / "reports")
    nodes = [Node("a", 2, 0, (0,)), Node("b", 2, 0, (10**17,))]
    columns = DescriptionColumns.from_arrays(build_generation_arrays(nodes, random.Random(1)))
    when = datetime(2026, 11, 22, tzinfo=UTC)
    first = write_generation(config.lake_path, columns, when, "g")
    latest = write_generation(config.lake_path, columns, when, "g")  # replaces first's files
    orphan = latest.directory / "part-00000-killed.parquet"  # a killed extraction's file
    orphan.write_bytes(first.files[0].read_bytes())

    assert vacuum_lake(config).removed_files == {"generations": 0}
    done = vacuum_lake(config, retention=timedelta(0))
    assert not first.files[0].exists(), "replaced"
    assert not orphan.exists(), "orphan"
    assert done.removed_files == {"generations": 2}
    again = read_artifact(config.lake_path, latest.generation)
    assert again.files == latest.files and again.read_description().blob_data == columns.blob_data
