"""The ``cdc_changes`` DAG, as a factory (the DAG's documentation is :data:`DOC`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG, BaseNotifier, dag, task, task_group

from cdcgen.airflow import alert_steps, alerts, map_index
from cdcgen.airflow import changes_steps as steps
from cdcgen.airflow.assets import extracted_changes, published_generations
from cdcgen.airflow.connections import DEFAULT_CONNECTIONS, ClusterConnections
from cdcgen.airflow.dag_factories.shared import (
    START_DATE,
    check_follow,
    default_args,
    follow_schedule,
    lake_path_param,
    tables_param,
)
from cdcgen.airflow.run_params import run_params
from cdcgen.airflow.sensors import WAIT_RETRIES, WindowClosedSensor
from cdcgen.airflow.spark_jobs import CHANGES_EXTRACT
from cdcgen.airflow.spark_submit import ChangesExtractOperator

DOC = """
### CDC changes: every change of every CDC table, complete and in order, in the lake

Runs on a schedule and whenever `cdc_generations` publishes a generation (its
Asset). For each CDC table (a mapped task group):

1. **wait** until every node's clock is past the window end + leeway + the
   confidence window (deferrable: the triggerer waits, not a worker), so no node
   can still write a change inside the window;
2. **extract** with Spark: one query per stream and window, spread over Spark tasks
   by the replica owning each stream, into the table's Delta table (partitioned by
   date and generation), one commit per Spark job; bucket checkpoints and the
   table's consistency watermark in the target keyspace; then the row checks
   (colocation, windows, batches, duplicates, counts) with Great Expectations.

Then **summarize** every table (rows, watermark, checks; one JSON file per run; the
metrics `cdcgen.changes.*`) and fail the run naming any table not extracted or whose
checks failed; a run that succeeds updates the changes Asset, which `cdc_replication`
follows. Last, **check_lag** fails the run naming each table further behind its
watermark than `CDCGEN_ALERT_LAG_SECONDS`. A failed task (and a run past its
deadline, when one is set) is told by the DAG's notifier (the task log, and the
`cdcgen_alerts` webhook when that connection exists).

In **continuous mode** (the factory's `follow`), each table's extract follows the
table for that long instead: a cycle every `CDCGEN_CHANGES_FOLLOW_EVERY_SECONDS`
extracts the windows closed since the last one, in one Spark application, so a change
reaches the lake about the confidence window + leeway + a cycle after it was written;
the next run, queued by the schedule, takes over where it ended.

Scheduled and manual runs are incremental (each stream from its checkpoint); a
**backfill** (Airflow UI or `airflow backfill create`) re-reads its data
intervals and replaces exactly their output, while the log still holds them.
A failed extraction is not retried: its checkpoints stand, the next run resumes
from them, and a retry would not re-check rows already checkpointed.

Logic lives in the `cdcgen` package (`cdcgen.pipeline.changes_plan`,
`cdcgen.changes`); the factory only wires it.

Built by a factory, so that a team configures it instead of copying it: its id,
schedule, start date and connections are arguments, and its Assets are named by the
source connection (:mod:`cdcgen.airflow.assets`), so the DAGs of two clusters live side
by side. ``dags/`` holds the defaults, built with no argument.
"""


def cdc_changes_dag(
    *,
    dag_id: str = "cdc_changes",
    schedule: str = "*/15 * * * *",
    start_date: datetime = START_DATE,
    connections: ClusterConnections = DEFAULT_CONNECTIONS,
    tags: Sequence[str] = ("cdc", "scylladb", "changes"),
    notifiers: Sequence[BaseNotifier] | None = None,
    deadline: timedelta | None = None,
    follow: timedelta | None = None,
    spark_conf: Mapping[str, str] | None = None,
) -> DAG:
    """The changes DAG of the cluster ``connections.source``: on the cron ``schedule`` and
    whenever that cluster's generations DAG publishes a generation. ``notifiers``: told
    of every failed task (default: :class:`~cdcgen.airflow.alerts.AlertNotifier`);
    ``deadline``: a run still going this long after it was queued is told too.
    ``follow``: continuous mode, each run follows its tables that long (at most
    :data:`~cdcgen.airflow.dag_factories.shared.MAX_FOLLOW`; the cron ``schedule`` alone then
    starts runs, and one of the same period keeps one run following); ``spark_conf``:
    added to each extract job's Spark configuration (``spark.cores.max``, so that each
    table's application leaves cores to the others on a standalone cluster)."""
    check_follow(follow)

    @dag(
        dag_id=dag_id,
        schedule=follow_schedule(schedule, follow, published_generations(connections.source)),
        start_date=start_date,
        catchup=False,
        max_active_runs=1,  # checkpoints are per stream: one run at a time per table
        dagrun_timeout=timedelta(hours=4),
        tags=list(tags),
        doc_md=DOC,
        default_args=default_args(
            retries=0,
            retry_delay=timedelta(seconds=30),
            notifiers=notifiers,
            connections=connections,
        ),
        deadline=alerts.deadline_alert(deadline, connections.alerts),
        user_defined_macros=map_index.MACROS,
        params={
            "tables": tables_param(
                "; empty: the connection's cdc_tables, else every CDC-enabled table."
            ),
            "lake_path": lake_path_param("Where the changes go"),
        },
    )
    def changes() -> None:
        @task(
            doc_md="The tables this run extracts, its interval and mode, and each Spark job.",
            retries=2,  # the cluster may be briefly unreachable; planning reads only
        )
        def plan(
            params: Any = None,
            dag_run: Any = None,
            data_interval_start: Any = None,
            data_interval_end: Any = None,
        ) -> Any:
            return steps.changes_plan(
                params, dag_run, data_interval_start, data_interval_end,
                connections=connections, follow=follow,
            )  # fmt: skip

        @task_group(group_id="table", default_args=map_index.GROUP_DEFAULTS)
        def per_table(table: Any, window_end_ms: Any, spark_args: Any, env_vars: Any) -> Any:
            wait = WindowClosedSensor(
                task_id="wait",
                window_end_ms=window_end_ms,
                table=table,
                cdc_conn_id=connections.source,
                deferrable=True,
                retries=WAIT_RETRIES,  # Airflow's resumed-deferral race (sensors module)
                doc_md="Every node's clock past the window end + leeway + confidence window.",
            )
            extract = ChangesExtractOperator(
                task_id="extract",
                cdc_conn_id=connections.source,
                conn_id=connections.spark,
                table=table,
                application=CHANGES_EXTRACT.application,
                application_args=spark_args,
                result_arg="--output",  # a file per attempt: a re-run never reads an old one
                conf={**CHANGES_EXTRACT.conf, **(spark_conf or {})},
                env_vars=env_vars,
                name=CHANGES_EXTRACT.name,
                doc_md="Spark: the table's closed windows, stream by stream, into the lake; "
                "checkpoints, watermark, row checks (exit 3: checks failed or data expired, "
                "4: a read failed after its retries).",
            )
            wait >> extract

        @task(
            trigger_rule="all_done",
            doc_md="Rows, watermark and checks per table (also a JSON file); fails on any "
            "problem. On success, an Asset event: the watermarks moved (cdc_replication).",
            outlets=[extracted_changes(connections.source)],
        )
        def summarize(planned: Any, params: Any = None, run_id: Any = None, ti: Any = None) -> Any:
            return steps.changes_summary(params, run_id, planned, connections=connections, ti=ti)

        @task(
            doc_md="Fails naming each table further behind its watermark than "
            "CDCGEN_ALERT_LAG_SECONDS (unset: never); the notifier tells.",
        )
        def check_lag(params: Any = None, ti: Any = None) -> Any:
            return alert_steps.check_lag(run_params(params), ti, connections=connections)

        planned = plan()
        per_table.expand_kwargs(planned) >> summarize(planned) >> check_lag()

    built: DAG = changes()
    return built
