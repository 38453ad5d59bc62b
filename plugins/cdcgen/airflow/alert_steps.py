"""Task body of the changes and replication DAGs' ``check_lag``: the lags the run's
``summarize`` measured, held against ``CDCGEN_ALERT_LAG_SECONDS``.

A task of its own, after ``summarize``: the summary and its Asset event stand (the next
DAG still runs on a lagging table's changes), and the run fails, named, for the lag
alone; the task's failure is what the DAG's notifiers tell (:mod:`cdcgen.airflow.alerts`).
"""

from __future__ import annotations

import logging
from typing import Any

from cdcgen.airflow.connections import DEFAULT_CONNECTIONS, ClusterConnections
from cdcgen.airflow.failures import fail_fast
from cdcgen.airflow.generation_steps import run_config
from cdcgen.airflow.run_params import RunParams

log = logging.getLogger(__name__)


@fail_fast
def check_lag(
    params: RunParams,
    ti: Any,
    summarize_task: str = "summarize",
    connections: ClusterConnections = DEFAULT_CONNECTIONS,
) -> list[str]:
    """Fail naming each table whose lag is above the threshold; the lags checked else."""
    from cdcgen.airflow import alerts, metrics

    threshold = run_config(params, connections.source).alert_lag
    points = metrics.from_xcom(ti.xcom_pull(task_ids=summarize_task, key=metrics.XCOM_KEY))
    checked = alerts.check_lag(points, threshold)
    for line in checked or ["no lag threshold set (CDCGEN_ALERT_LAG_SECONDS)"]:
        log.info("%s", line)
    return checked
