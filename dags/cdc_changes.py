"""CDC changes: every change of every CDC table into the lake (cdcgen.airflow.dags.changes).

The default DAG, built by its factory with the default connections; another cluster's
is the same call with its own ``dag_id`` and ``connections`` (see docs/dags.md).
"""

from __future__ import annotations

from cdcgen.airflow.dags import cdc_changes_dag

dag = cdc_changes_dag()
