"""The files of a changes table as a reader sees them: those of its current Delta version.

Files replaced by a later commit stay on disk until the lake is vacuumed, and a killed
job's files belong to no commit; neither is part of the table. Tests that look at files
one by one (their order, their partitions) list them from the table's log with delta-rs.
"""

from __future__ import annotations

from pathlib import Path

from cdcgen.changes import layout


def committed_files(root: Path) -> list[Path]:
    """The Parquet files of the table's current version, sorted; none without a table."""
    return layout.committed_files(root) if layout.is_delta(root) else []
