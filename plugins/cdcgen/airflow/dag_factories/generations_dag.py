"""The ``cdc_generations`` DAG, as a factory (the DAG's documentation is :data:`DOC`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import (
    DAG,
    AssetOrTimeSchedule,
    BaseNotifier,
    CronDataIntervalTimetable,
    dag,
    task,
    task_group,
)

from cdcgen.airflow import alerts, map_index
from cdcgen.airflow import generation_steps as steps
from cdcgen.airflow.assets import committed_generations, publications, published_generations
from cdcgen.airflow.connections import DEFAULT_CONNECTIONS, ClusterConnections
from cdcgen.airflow.dag_factories.shared import (
    START_DATE,
    default_args,
    flag_param,
    lake_path_param,
    text_param,
)
from cdcgen.airflow.generation_steps import PlannedGeneration
from cdcgen.airflow.run_params import run_params
from cdcgen.airflow.sensors import WAIT_RETRIES, GenerationStartedSensor
from cdcgen.airflow.spark_jobs import GENERATION_EXTRACT
from cdcgen.airflow.spark_submit import GenerationExtractOperator
from cdcgen.airflow.xcom import from_xcom, list_or_none_from_xcom, to_xcom
from cdcgen.core.generation import Generation

DOC = """
### CDC generations: detect, wait, extract, validate, publish

Follows the CDC generations of a ScyllaDB cluster (raft, gossip, legacy V1 or
tablets, per the `cdc_source` connection) and publishes their stream
descriptions to the user-facing tables, the way ScyllaDB does, but only after
checking them.

Runs when the cluster commits a generation that is not published yet (a
watcher in the triggerer polls the generation metadata every few seconds), and
on its cron schedule (every ten minutes by default) as a safety net.

1. **detect**: committed generations not yet published, oldest first; a
   backfill run also re-does those whose timestamp falls in its data interval.
2. per generation (a mapped task group):
   - **wait** until every node's clock has passed the generation timestamp plus
     leeway (deferrable: the triggerer waits, not a worker);
   - **extract** the description with Spark into the lake, one row per stream
     (spark-submit, or on the Spark Connect server `CDCGEN_SPARK_REMOTE` names);
   - **validate** with the Great Expectations suites (Data Docs in the report
     directory); a failure stops this generation's publication.
3. **publish** the validated generations oldest first: for each,
   `cdc_streams_descriptions_v2` then `cdc_generation_timestamps`, and an Asset
   event. Consumers follow the timestamps in order, so a generation that cannot
   be published holds back every newer one instead of letting them skip it.
4. **summarize** the run (and the metrics `cdcgen.generations.*`); it fails the run if
   anything was not published.

A failed task (and a run past its deadline, when one is set) is told by the DAG's
notifier (the task log, and the `cdcgen_alerts` webhook when that connection exists).

Logic lives in the `cdcgen` package (`cdcgen.airflow`, `cdcgen.pipeline`); this
file only wires it.

Built by a factory, so that a team configures it instead of copying it: its id,
schedule, start date and connections are arguments, and its Assets are named by the
source connection (:mod:`cdcgen.airflow.assets`), so the DAGs of two clusters live side
by side. ``dags/`` holds the defaults, built with no argument.
"""


def cdc_generations_dag(
    *,
    dag_id: str = "cdc_generations",
    schedule: str = "*/10 * * * *",
    start_date: datetime = START_DATE,
    connections: ClusterConnections = DEFAULT_CONNECTIONS,
    tags: Sequence[str] = ("cdc", "scylladb", "generations"),
    notifiers: Sequence[BaseNotifier] | None = None,
    deadline: timedelta | None = None,
    watch: bool = True,
    watch_poll_interval: float | None = None,
) -> DAG:
    """The generations DAG of the cluster ``connections.source``: on the cron
    ``schedule``, and with ``watch`` also as soon as the triggerer's watcher sees a
    generation committed and not published (polling every ``watch_poll_interval``
    seconds; default :data:`~cdcgen.airflow.triggers.WATCH_POLL_SECONDS`). The cron
    schedule stays the safety net: a watcher down, or a run that failed to publish,
    waits for it."""
    published = published_generations(connections.source)  # environment only: no I/O
    alias = publications(connections.source)
    timetable = CronDataIntervalTimetable(schedule, timezone="UTC")
    when: Any = timetable
    if watch:
        watched = committed_generations(connections.source, poll_interval=watch_poll_interval)
        when = AssetOrTimeSchedule(timetable=timetable, assets=[watched])

    @dag(
        dag_id=dag_id,
        schedule=when,
        start_date=start_date,
        catchup=False,
        max_active_runs=1,
        dagrun_timeout=timedelta(hours=2),
        tags=list(tags),
        doc_md=DOC,
        default_args=default_args(
            retries=0,
            retry_delay=timedelta(seconds=10),
            notifiers=notifiers,
            connections=connections,
        ),
        deadline=alerts.deadline_alert(deadline, connections.alerts),
        user_defined_macros=map_index.MACROS,
        params={
            "generation_id": text_param(
                "Generation", "Only this generation (source id, ISO timestamp or ms); empty: all."
            ),
            "force": flag_param(
                "Force re-publish", "Also re-publish generations that are already published."
            ),
            "lake_path": lake_path_param("Where the extract job writes"),
        },
    )
    def generations() -> None:
        @task(
            doc_md="Committed generations to handle in this run, with their Spark arguments.",
            retries=2,  # the cluster may be briefly unreachable; selection is idempotent
        )
        def detect(
            params: Any = None,
            data_interval_start: Any = None,
            data_interval_end: Any = None,
            dag_run: Any = None,
        ) -> Any:
            return to_xcom(steps.detect(
                run_params(params), data_interval_start, data_interval_end, dag_run.run_type,
                connections=connections,
            ))  # fmt: skip

        @task(doc_md="Great Expectations suites on the extracted generation; fails with a summary.")
        def validate(generation: Any, params: Any = None, ti: Any = None) -> Any:
            return to_xcom(steps.validate(
                run_params(params), from_xcom(Generation, generation), ti,
                connections=connections,
            ))  # fmt: skip

        @task(
            trigger_rule="all_done",  # publish what passed even if another generation failed
            doc_md="Validated generations, oldest first: streams, then the timestamp row; "
            "a generation that cannot go out holds back every newer one. "
            "One Asset event per published generation.",
            outlets=[alias],
            retries=2,  # publication is idempotent: a retry rewrites the same rows
        )
        def publish(
            detected: Any, params: Any = None, ti: Any = None, outlet_events: Any = None
        ) -> Any:
            return to_xcom(steps.publish(
                run_params(params), list_or_none_from_xcom(PlannedGeneration, detected), ti,
                "generation", outlet_events, alias, published, connections=connections,
            ))  # fmt: skip

        @task_group(group_id="generation", default_args=map_index.GROUP_DEFAULTS)
        def per_generation(generation: Any, spark_args: Any, env_vars: Any) -> Any:
            wait = GenerationStartedSensor(
                task_id="wait",
                generation=generation,
                cdc_conn_id=connections.source,
                deferrable=True,
                retries=WAIT_RETRIES,  # Airflow's resumed-deferral race (sensors module)
                doc_md="Every node's clock past the generation timestamp + leeway (deferrable).",
            )
            extract = GenerationExtractOperator(
                task_id="extract",
                cdc_conn_id=connections.source,
                conn_id=connections.spark,
                generation=generation,
                application=GENERATION_EXTRACT.application,
                application_args=spark_args,
                conf=dict(GENERATION_EXTRACT.conf),
                env_vars=env_vars,
                name=GENERATION_EXTRACT.name,
                retries=1,  # a node restarting is common; a terminal error is not retried
                doc_md="Spark: the generation's description to Parquet, one row per stream.",
            )
            wait >> extract >> validate(generation=generation)

        @task(
            trigger_rule="all_done",
            doc_md="What the run detected, validated and published (also a JSON file).",
        )
        def summarize(detected: Any, params: Any = None, run_id: Any = None, ti: Any = None) -> Any:
            return to_xcom(steps.summarize_run(
                run_params(params), run_id, list_or_none_from_xcom(PlannedGeneration, detected),
                ti, group_id="generation", connections=connections,
            ))  # fmt: skip

        detected = detect()
        published_now = publish(detected)
        per_generation.expand_kwargs(detected) >> published_now >> summarize(detected)

    built: DAG = generations()
    return built
