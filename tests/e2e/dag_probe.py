"""Parse one DAG file the way the DAG processor does and report what parsing cost.

Run in a subprocess (fresh interpreter, the test's Airflow home) by
test_dag_integrity.py; prints one JSON object.  Mirrors Airflow's own example-DAG
tests: import errors, metadata-DB queries issued while parsing, connections
fetched while parsing, plus which heavy SDKs got imported.
"""

from __future__ import annotations

import json
import sys
from unittest.mock import patch

HEAVY = ("pyspark", "great_expectations", "pandas")


def main(path: str) -> None:
    from airflow import settings
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models import Connection
    from airflow.sdk import BaseHook
    from sqlalchemy import event

    queries: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        queries.append(statement)

    event.listen(settings.engine, "before_cursor_execute", count)
    with patch.object(BaseHook, "get_connection") as get_connection:
        get_connection.return_value = Connection(conn_id="probe", conn_type="generic")
        bag = DagBag(dag_folder=path)
    event.remove(settings.engine, "before_cursor_execute", count)
    heavy = sorted(
        name
        for name in sys.modules
        if name.split(".", 1)[0] in HEAVY or name == "cassandra.cluster"
    )
    print(
        json.dumps(
            {
                "import_errors": {k: str(v) for k, v in bag.import_errors.items()},
                "dag_ids": sorted(bag.dag_ids),
                "queries": queries,
                "get_connection_calls": get_connection.call_count,
                "heavy_modules": heavy,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
