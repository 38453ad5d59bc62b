"""CDC replication: each table's changes, from the lake into a sink (cdcgen.airflow.dag_factories).

The default DAG, built by its factory with the default connections; another cluster's
is the same call with its own ``dag_id`` and ``connections`` (see docs/dags.md).
"""

from __future__ import annotations

from cdcgen.airflow.dag_factories import cdc_replication_dag

dag = cdc_replication_dag()
