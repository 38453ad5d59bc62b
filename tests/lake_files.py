"""Lake files as tests see them: a changes table's current files, an old-layout generation.

The files of a changes table as a reader sees them are those of its current Delta version.

Files replaced by a later commit stay on disk until the lake is vacuumed, and a killed
job's files belong to no commit; neither is part of the table. Tests that look at files
one by one (their order, their partitions) list them from the table's log with delta-rs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq

from cdcgen.adapters import delta_tables
from cdcgen.core.ring import Ring, ring_to_json
from cdcgen.core.time import from_millis
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.description_json import description_bytes
from cdcgen.generation_lake.streams_table import flatten_generation


def committed_files(root: Path) -> list[Path]:
    """The Parquet files of the local table's current version, sorted; none without a table."""
    if not delta_tables.is_delta(root):
        return []
    return [file.path for file in delta_tables.committed_files(root)]


def old_generation_partition(
    lake: Path,
    columns: DescriptionColumns,
    millis: int,
    generation_id: str,
    ring: Ring,
    table: str | None = None,
) -> Path:
    """A partition as earlier versions wrote it: Parquet, description, ring, manifest."""
    base = lake / "generations" / (f"table={table}" if table else "")
    directory = base / f"generation_ts={millis}"
    directory.mkdir(parents=True)
    pq.write_table(
        flatten_generation(columns, from_millis(millis), generation_id),
        directory / "part-00000.parquet",
    )
    (directory / "description.json").write_bytes(description_bytes(columns))
    (directory / "topology.json").write_text(json.dumps(ring_to_json(ring)))
    manifest = {
        "timestamp_ms": millis,
        "generation_id": generation_id,
        "entry_count": columns.entry_count,
        "stream_count": columns.stream_count,
        "description_sha256": hashlib.sha256(
            (directory / "description.json").read_bytes()
        ).hexdigest(),
        "files": ["part-00000.parquet"],
        "has_topology": True,
        "table": table,
    }
    (directory / "_manifest.json").write_text(json.dumps(manifest))
    return directory
