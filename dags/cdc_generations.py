"""
### CDC generations: detect, wait, extract, validate, publish

Follows the CDC generations of a ScyllaDB cluster (raft, gossip, legacy V1 or
tablets, per the `cdc_source` connection) and publishes their stream
descriptions to the user-facing tables, the way ScyllaDB does, but only after
checking them.

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
4. **summarize** the run; it fails the run if anything was not published.

Logic lives in the `cdcgen` package (`cdcgen.airflow`, `cdcgen.pipeline`); this
file only wires it.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import (
    CronDataIntervalTimetable,
    Param,
    dag,
    task,
    task_group,
)

from cdcgen.airflow import generation_steps as steps
from cdcgen.airflow.assets import PUBLICATIONS, published_generations
from cdcgen.airflow.connections import SOURCE_CONN_ID, SPARK_CONN_ID
from cdcgen.airflow.sensors import GenerationStartedSensor
from cdcgen.airflow.spark_jobs import GENERATION_EXTRACT
from cdcgen.airflow.spark_submit import GenerationExtractOperator

PUBLISHED = published_generations()  # environment only: no I/O at parse time


@dag(
    dag_id="cdc_generations",
    schedule=CronDataIntervalTimetable("*/10 * * * *", timezone="UTC"),
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=2),
    tags=["cdc", "scylladb", "generations"],
    doc_md=__doc__,
    default_args={"retries": 0, "retry_delay": timedelta(seconds=10)},
    params={
        "generation_id": Param(
            "",
            type="string",
            title="Generation",
            description="Only this generation (source id, ISO timestamp or ms); empty: all.",
        ),
        "force": Param(
            False,
            type="boolean",
            title="Force re-publish",
            description="Also re-publish generations that are already published.",
        ),
        "lake_path": Param(
            "",
            type="string",
            title="Lake path",
            description="Where the extract job writes; empty: CDCGEN_LAKE_PATH or lake/. "
            "Absolute, inside CDCGEN_LAKE_PATH or a CDCGEN_LAKE_ROOTS root.",
        ),
    },
)
def cdc_generations() -> None:
    @task(
        doc_md="Committed generations to handle in this run, with their Spark arguments.",
        retries=2,  # the cluster may be briefly unreachable; selection itself is idempotent
    )
    def detect(params=None, data_interval_start=None, data_interval_end=None, dag_run=None):
        return steps.detect(params, data_interval_start, data_interval_end, dag_run.run_type)

    @task(doc_md="Great Expectations suites on the extracted generation; fails with a summary.")
    def validate(generation, params=None, ti=None):
        return steps.validate(params, generation, ti)

    @task(
        trigger_rule="all_done",  # publish what passed even if another generation failed
        doc_md="Validated generations, oldest first: streams, then the timestamp row; "
        "a generation that cannot go out holds back every newer one. "
        "One Asset event per published generation.",
        outlets=[PUBLICATIONS],
        retries=2,  # publication is idempotent: a retry rewrites the same rows
    )
    def publish(detected, params=None, ti=None, outlet_events=None):
        return steps.publish(
            params, detected, ti, "generation", outlet_events, PUBLICATIONS, PUBLISHED
        )

    @task_group(group_id="generation")
    def per_generation(generation, spark_args, env_vars):
        wait = GenerationStartedSensor(
            task_id="wait",
            generation=generation,
            cdc_conn_id=SOURCE_CONN_ID,
            deferrable=True,
            doc_md="Every node's clock past the generation timestamp + leeway (deferrable).",
        )
        extract = GenerationExtractOperator(
            task_id="extract",
            cdc_conn_id=SOURCE_CONN_ID,
            conn_id=SPARK_CONN_ID,
            application=GENERATION_EXTRACT.application,
            application_args=spark_args,
            conf=dict(GENERATION_EXTRACT.conf),
            env_vars=env_vars,
            name=GENERATION_EXTRACT.name,
            retries=1,  # a node restarting is common; a corrupt generation fails twice
            doc_md="Spark: the generation's description to Parquet, one row per stream.",
        )
        wait >> extract >> validate(generation)

    @task(
        trigger_rule="all_done",
        doc_md="What the run detected, validated and published (also a JSON file).",
    )
    def summarize(detected, params=None, run_id=None, ti=None):
        return steps.summarize_run(params, run_id, detected, ti, group_id="generation")

    detected = detect()
    published = publish(detected)
    per_generation.expand_kwargs(detected) >> published >> summarize(detected)


cdc_generations()
