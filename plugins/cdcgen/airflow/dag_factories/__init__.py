"""The DAGs as factories: ``cdc_generations_dag(...)`` and the same for the maintenance,
changes and replication DAGs. ``dags/`` builds the defaults with them; another cluster's
are the same calls with its own ``dag_id`` and :class:`ClusterConnections`."""

from __future__ import annotations

from cdcgen.airflow.connections import ClusterConnections
from cdcgen.airflow.dag_factories.changes_dag import cdc_changes_dag
from cdcgen.airflow.dag_factories.generations_dag import cdc_generations_dag
from cdcgen.airflow.dag_factories.maintenance_dag import cdc_generations_maintenance_dag
from cdcgen.airflow.dag_factories.replication_dag import cdc_replication_dag

__all__ = [
    "ClusterConnections",
    "cdc_changes_dag",
    "cdc_generations_dag",
    "cdc_generations_maintenance_dag",
    "cdc_replication_dag",
]
