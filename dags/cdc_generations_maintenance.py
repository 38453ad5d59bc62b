"""
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
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import CronDataIntervalTimetable, dag, task

from cdcgen.airflow import generation_steps as steps


@dag(
    dag_id="cdc_generations_maintenance",
    schedule=CronDataIntervalTimetable("17 3 * * *", timezone="UTC"),
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=1),
    tags=["cdc", "scylladb", "maintenance"],
    doc_md=__doc__,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=1)},
)
def cdc_generations_maintenance() -> None:
    @task(doc_md="V1 -> V2 rewrite and the `rewritten` marker (V1 sources only).")
    def rewrite_v1(params=None):
        return steps.rewrite_v1(params)

    @task(
        doc_md="`expired` on superseded generations past every CDC table's TTL; "
        "their description rows deleted when CDCGEN_PRUNE_EXPIRED_AFTER_SECONDS is set."
    )
    def expire_superseded(params=None):
        return steps.expire_superseded(params)

    @task(doc_md="Files replaced by Delta commits over 7 days ago deleted from the lake.")
    def vacuum_lake(params=None):
        return steps.vacuum_lake(params)

    rewrite_v1() >> expire_superseded() >> vacuum_lake()


cdc_generations_maintenance()
