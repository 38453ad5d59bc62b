"""CDC generations maintenance: V1 rewrite, expiry, lake vacuum
(cdcgen.airflow.dag_factories.maintenance_dag).

The default DAG, built by its factory with the default connections; another cluster's
is the same call with its own ``dag_id`` and ``connections`` (see docs/dags.md).
"""

from __future__ import annotations

from cdcgen.airflow.dag_factories import cdc_generations_maintenance_dag

dag = cdc_generations_maintenance_dag()
