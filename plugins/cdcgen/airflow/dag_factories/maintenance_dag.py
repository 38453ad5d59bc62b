"""The ``cdc_generations_maintenance`` DAG, as a factory (its documentation is :data:`DOC`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG, BaseNotifier, CronDataIntervalTimetable, dag, task

from cdcgen.airflow import generation_steps as steps
from cdcgen.airflow.connections import DEFAULT_CONNECTIONS, ClusterConnections
from cdcgen.airflow.dag_factories.shared import START_DATE, default_args
from cdcgen.airflow.run_params import run_params
from cdcgen.airflow.xcom import to_xcom

DOC = """
### CDC generations: maintenance of the published tables

1. **rewrite_v1**: on a cluster upgraded from ScyllaDB 4.3, copy the V1 stream
   descriptions that may still hold data to `cdc_streams_descriptions_v2` /
   `cdc_generation_timestamps`, then write the `rewritten` marker, after which
   readers (and `cdc_generations`) use the V2 tables. Skipped for other modes.
2. **expire_superseded**: set `expired` on published generations that are
   superseded and older than every CDC table's TTL (ScyllaDB never writes it); with
   `CDCGEN_PRUNE_EXPIRED_AFTER_SECONDS` set, delete the description rows of those
   expired that long ago (timestamp row first), never in ScyllaDB's own
   `system_distributed` and never a generation a changes table still reads.
3. **vacuum_lake**: delete the lake's files that Delta commits replaced more than
   7 days ago (longer than any run), so time travel reaches back a week.

All are idempotent. Logic lives in `cdcgen.pipeline.maintenance`.

Built by a factory, so that a team configures it instead of copying it: its id,
schedule, start date and connections are arguments, and its Assets are named by the
source connection (:mod:`cdcgen.airflow.assets`), so the DAGs of two clusters live side
by side. ``dags/`` holds the defaults, built with no argument.
"""


def cdc_generations_maintenance_dag(
    *,
    dag_id: str = "cdc_generations_maintenance",
    schedule: str = "17 3 * * *",
    start_date: datetime = START_DATE,
    connections: ClusterConnections = DEFAULT_CONNECTIONS,
    tags: Sequence[str] = ("cdc", "scylladb", "maintenance"),
    notifiers: Sequence[BaseNotifier] | None = None,
) -> DAG:
    """The maintenance DAG of the cluster ``connections.source`` (a cron ``schedule``);
    ``notifiers``: told of every failed task (default:
    :class:`~cdcgen.airflow.alerts.AlertNotifier`)."""

    @dag(
        dag_id=dag_id,
        schedule=CronDataIntervalTimetable(schedule, timezone="UTC"),
        start_date=start_date,
        catchup=False,
        max_active_runs=1,
        dagrun_timeout=timedelta(hours=1),
        tags=list(tags),
        doc_md=DOC,
        default_args=default_args(
            retries=2,
            retry_delay=timedelta(minutes=1),
            notifiers=notifiers,
            connections=connections,
        ),
    )
    def maintenance() -> None:
        @task(doc_md="V1 -> V2 rewrite and the `rewritten` marker (V1 sources only).")
        def rewrite_v1(params: Any = None) -> Any:
            return to_xcom(steps.rewrite_v1(run_params(params), connections=connections))

        @task(
            doc_md="`expired` on superseded generations past every CDC table's TTL; "
            "their description rows deleted when CDCGEN_PRUNE_EXPIRED_AFTER_SECONDS is set."
        )
        def expire_superseded(params: Any = None) -> Any:
            return to_xcom(steps.expire_superseded(run_params(params), connections=connections))

        @task(doc_md="Files replaced by Delta commits over 7 days ago deleted from the lake.")
        def vacuum_lake(params: Any = None) -> Any:
            return to_xcom(steps.vacuum_lake(run_params(params), connections=connections))

        rewrite_v1() >> expire_superseded() >> vacuum_lake()

    built: DAG = maintenance()
    return built
