"""The ``cdc_replication`` DAG, as a factory (the DAG's documentation is :data:`DOC`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG, BaseNotifier, Param, dag, task, task_group

from cdcgen.airflow import alert_steps, alerts, map_index
from cdcgen.airflow import replication_steps as steps
from cdcgen.airflow.assets import extracted_changes, replications
from cdcgen.airflow.connections import DEFAULT_CONNECTIONS, ClusterConnections
from cdcgen.airflow.dag_factories.shared import (
    START_DATE,
    check_follow,
    default_args,
    flag_param,
    follow_schedule,
    tables_param,
    text_param,
)
from cdcgen.airflow.replication_steps import PlannedReplication
from cdcgen.airflow.run_params import run_params
from cdcgen.airflow.spark_jobs import REPLICATION_BOOTSTRAP
from cdcgen.airflow.spark_submit import ReplicationBootstrapOperator
from cdcgen.airflow.xcom import list_or_none_from_xcom, to_xcom

DOC = """
### CDC replication: each table's changes, from the lake into a sink cluster

Runs on a schedule and whenever `cdc_changes` moves the lake's watermarks (its Asset).
The sink is the `cdcgen_sink` connection (hosts, credentials, TLS; extras
`sink_keyspace` and `replicated_tables`). The plan reads each sink table's state; then
for each table (a mapped task group):

1. **bootstrap**, only when needed (the `mode` Param asks, the sink table was never
   bootstrapped, or its copy is unfinished; skipped otherwise): a Spark job
   (spark-submit on the `cdcgen_spark` connection) copies the source table by token
   ranges at a recorded time, write times and TTLs kept, each range recorded on the
   sink as it is done; a copy killed part-way resumes at the same time with the ranges
   not done; then changes apply from that time;
2. **apply** the lake's changes from the sink's consistency timestamp to the table's
   watermark, in time slices of bounded size, in time order, each CDC batch's
   statements in one request, every write with its original timestamp (last writer
   wins); the consistency timestamp is kept on the sink and moved after each slice is
   acknowledged;
3. emit an Asset event for the sink table with its consistency timestamp and lag;

then **summarize** the run (every table's record, also a JSON file under the report
directory's `summaries/replication`; the metrics `cdcgen.replication.*`); it fails the
run naming each table not brought forward. Last, **check_lag** fails the run naming
each sink table further behind than `CDCGEN_ALERT_LAG_SECONDS`. A failed task (and a
run past its deadline, when one is set) is told by the DAG's notifier (the task log, and
the `cdcgen_alerts` webhook when that connection exists).

In **continuous mode** (the factory's `follow`), each table's apply follows the sink
for that long instead: a cycle every `CDCGEN_REPLICATION_FOLLOW_EVERY_SECONDS` applies
what the lake's watermark passed since the last, so a change reaches the sink about a
cycle after it reached the watermark; the next run, queued by the schedule, takes over.

A sink the lake no longer covers (the log's TTL expired changes before they were
extracted) fails naming the command that re-bootstraps it: a run with
`mode = bootstrap-replace` from the UI, which truncates and re-copies the sink table
(set `dry_run` first to see what it would truncate; nothing is written). The Params
may only narrow what the `cdcgen_sink` connection configures, and a sink that is the
source table itself is refused.
A change the sink refuses is recorded in `<sink keyspace>.cdc_replication_rejects`
and fails the task, named. The replication page of the report shows each sink.

Logic lives in the `cdcgen` package (`cdcgen.replication`); the factory only wires it.

Built by a factory, so that a team configures it instead of copying it: its id,
schedule, start date and connections are arguments, and its Assets are named by the
source connection (:mod:`cdcgen.airflow.assets`), so the DAGs of two clusters live side
by side. ``dags/`` holds the defaults, built with no argument.
"""


def cdc_replication_dag(
    *,
    dag_id: str = "cdc_replication",
    schedule: str = "*/15 * * * *",
    start_date: datetime = START_DATE,
    connections: ClusterConnections = DEFAULT_CONNECTIONS,
    tags: Sequence[str] = ("cdc", "scylladb", "replication"),
    notifiers: Sequence[BaseNotifier] | None = None,
    deadline: timedelta | None = None,
    follow: timedelta | None = None,
) -> DAG:
    """The replication DAG from the cluster ``connections.source`` to ``connections.sink``:
    on the cron ``schedule`` and whenever that cluster's changes DAG moves a watermark.
    ``notifiers``: told of every failed task (default:
    :class:`~cdcgen.airflow.alerts.AlertNotifier`); ``deadline``: a run still going this
    long after it was queued is told too; ``follow``: continuous mode, each run's
    applies follow their sinks that long (at most
    :data:`~cdcgen.airflow.dag_factories.shared.MAX_FOLLOW`; the cron ``schedule`` alone then
    starts runs)."""
    check_follow(follow)
    alias = replications(connections.source)

    @dag(
        dag_id=dag_id,
        schedule=follow_schedule(schedule, follow, extracted_changes(connections.source)),
        start_date=start_date,
        catchup=False,
        max_active_runs=1,  # one consistency point per sink table: one run at a time
        dagrun_timeout=timedelta(hours=4),
        tags=list(tags),
        doc_md=DOC,
        default_args=default_args(
            retries=2,
            retry_delay=timedelta(seconds=30),
            notifiers=notifiers,
            connections=connections,
        ),
        deadline=alerts.deadline_alert(deadline, connections.alerts),
        user_defined_macros=map_index.MACROS,
        params={
            "tables": tables_param(
                " among the sink connection's replicated_tables; empty: all of them."
            ),
            "sink_keyspace": text_param(
                "Sink keyspace",
                "Where the tables go (same names): one of the connection's sink_keyspace "
                "list; empty: its first.",
            ),
            "mode": Param(
                "apply",
                enum=["apply", "bootstrap", "bootstrap-replace"],
                title="Mode",
                description="bootstrap: copy the source first (the sink table must be "
                "empty); bootstrap-replace: truncate the sink table, then copy.",
            ),
            "dry_run": flag_param(
                "Dry run",
                "Check everything and say what the run would do (which table a bootstrap "
                "would truncate, which range it would apply); write nothing.",
            ),
        },
    )
    def replication() -> None:
        @task(doc_md="The tables this run replicates, and which of them need a bootstrap.")
        def plan(params: Any = None, run_id: Any = None) -> Any:
            return to_xcom(
                steps.replication_plan(run_params(params), run_id, connections=connections)
            )

        @task_group(group_id="table", default_args=map_index.GROUP_DEFAULTS)
        def per_table(table: Any, spark_args: Any, env_vars: Any) -> Any:
            bootstrap = ReplicationBootstrapOperator(
                task_id="bootstrap",
                cdc_conn_id=connections.source,
                sink_conn_id=connections.sink,
                conn_id=connections.spark,
                table=table,
                application=REPLICATION_BOOTSTRAP.application,
                application_args=spark_args,
                result_arg="--output",  # a file per attempt
                conf=dict(REPLICATION_BOOTSTRAP.conf),
                env_vars=env_vars,
                name=REPLICATION_BOOTSTRAP.name,
                doc_md="Spark: copy the source table into the sink by token ranges "
                "(resuming an unfinished copy); skipped when the sink table needs none.",
            )

            @task(
                trigger_rule="none_failed",
                doc_md="Apply the lake's changes to the sink table, one Asset event.",
                outlets=[alias],
            )
            def apply(
                table: Any,
                params: Any = None,
                run_id: Any = None,
                outlet_events: Any = None,
                ti: Any = None,
            ) -> Any:
                return to_xcom(steps.replicate_table(
                    run_params(params), table, run_id, outlet_events, alias,
                    connections=connections, ti=ti, follow=follow,
                ))  # fmt: skip

            bootstrap >> apply(table=table)

        @task(
            trigger_rule="all_done",
            doc_md="What the run replicated, per table (also a JSON file); fails the run "
            "naming each table that was not brought forward.",
        )
        def summarize(planned: Any, params: Any = None, run_id: Any = None, ti: Any = None) -> Any:
            return to_xcom(steps.replication_summary(
                run_params(params), run_id, list_or_none_from_xcom(PlannedReplication, planned),
                ti, connections=connections,
            ))  # fmt: skip

        @task(
            retries=0,  # the lag was measured once, by summarize: a retry reads the same
            doc_md="Fails naming each sink table further behind than "
            "CDCGEN_ALERT_LAG_SECONDS (unset: never); the notifier tells.",
        )
        def check_lag(params: Any = None, ti: Any = None) -> Any:
            return alert_steps.check_lag(run_params(params), ti, connections=connections)

        planned = plan()
        per_table.expand_kwargs(planned) >> summarize(planned) >> check_lag()

    built: DAG = replication()
    return built
