"""CDC changes: every change of every CDC table into the lake
(cdcgen.airflow.dag_factories.changes_dag).

The default DAG, built by its factory with the default connections; another cluster's
is the same call with its own ``dag_id`` and ``connections`` (see docs/dags.md).
"""

from __future__ import annotations

from cdcgen.airflow.dag_factories import cdc_changes_dag

dag = cdc_changes_dag()
