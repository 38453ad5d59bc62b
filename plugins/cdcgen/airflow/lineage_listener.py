"""A listener that makes each task's hook lineage its own, wherever tasks run.

The ``@task`` bodies report their inputs and outputs to Airflow's hook lineage collector
(:func:`cdcgen.airflow.lineage.report`), one per process, which the OpenLineage provider
reads when a task starts and ends. A deployment runs every task in a process of its
own, so the collector holds that task's datasets alone; ``airflow dags test`` (the demo,
the e2e tests) runs every task in one process, where the collector would go on holding
what earlier tasks reported, and each later task's events would claim them too. So a
new collector starts with every task: this listener drops the process's collector as a
task starts running, before the OpenLineage listener reads it (``tryfirst``).

Loaded with the package's plugin (:mod:`cdcgen.airflow.reports_plugin`), in every Airflow
process: it imports nothing but Airflow's lineage module, and only when a task starts.
"""

from __future__ import annotations

from typing import Any

from airflow.listeners import hookimpl


@hookimpl(tryfirst=True)
def on_task_instance_running(previous_state: Any, task_instance: Any) -> None:
    """A fresh hook lineage collector for the task that starts."""
    from airflow.sdk.lineage import get_hook_lineage_collector

    get_hook_lineage_collector.cache_clear()
