"""What the Airflow grid shows for the mapped tasks of a test's DAG runs: the map index
Airflow rendered from each task's ``map_index_template``, read from the run's metadata
database (the test's own copy of the home)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def rendered_map_indexes(home: Path, dag_id: str) -> dict[str, set[str | None]]:
    """Per mapped task id of ``dag_id``, the labels its instances rendered (None: none)."""
    with sqlite3.connect(home / "airflow.db") as db:
        rows = db.execute(
            "SELECT task_id, rendered_map_index FROM task_instance "
            "WHERE dag_id = ? AND map_index >= 0",
            (dag_id,),
        ).fetchall()
    shown: dict[str, set[str | None]] = {}
    for task_id, label in rows:
        shown.setdefault(task_id, set()).add(label)
    return shown
