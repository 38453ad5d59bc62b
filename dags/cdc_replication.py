"""
### CDC replication: each table's changes, from the lake into a sink cluster

Runs on a schedule and whenever `cdc_changes` moves the lake's watermarks (its Asset).
The sink is the `cdcgen_sink` connection (hosts, credentials, TLS; extras
`sink_keyspace` and `replicated_tables`). For each table (a mapped task):

1. a sink table never bootstrapped is first **bootstrapped**: a copy of the source
   table at a recorded time, write times kept, then changes apply from that time;
2. **apply** the lake's changes from the sink's consistency timestamp to the table's
   watermark, stream by stream, each CDC batch as one single-partition batch, every
   write with its original timestamp (last writer wins); per-stream checkpoints and
   the consistency timestamp are kept on the sink, written after what they record;
3. emit an Asset event for the sink table with its consistency timestamp and lag.

A sink the lake no longer covers (the log's TTL expired changes before they were
extracted) fails naming the command that re-bootstraps it: a run with
`mode = bootstrap-replace` from the UI, which truncates and re-copies the sink table
(set `dry_run` first to see what it would truncate; nothing is written). The Params
may only narrow what the `cdcgen_sink` connection configures, and a sink that is the
source table itself is refused.
A change the sink refuses is recorded in `<sink keyspace>.cdc_replication_rejects`
and fails the task, named. The replication page of the report shows each sink.

Logic lives in the `cdcgen` package (`cdcgen.replication`); this file only wires it.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import AssetOrTimeSchedule, CronDataIntervalTimetable, Param, dag, task

from cdcgen.airflow import replication_steps as steps
from cdcgen.airflow.assets import REPLICATIONS, extracted_changes


@dag(
    dag_id="cdc_replication",
    schedule=AssetOrTimeSchedule(
        timetable=CronDataIntervalTimetable("*/15 * * * *", timezone="UTC"),
        assets=[extracted_changes()],
    ),
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # checkpoints are per stream: one run at a time per sink
    dagrun_timeout=timedelta(hours=4),
    tags=["cdc", "scylladb", "replication"],
    doc_md=__doc__,
    default_args={"retries": 2, "retry_delay": timedelta(seconds=30)},
    params={
        "tables": Param(
            "",
            type="string",
            title="Tables",
            description="keyspace.table[,...] among the cdcgen_sink connection's "
            "replicated_tables; empty: all of them.",
        ),
        "sink_keyspace": Param(
            "",
            type="string",
            title="Sink keyspace",
            description="Where the tables go (same names): one of the connection's "
            "sink_keyspace list; empty: its first.",
        ),
        "mode": Param(
            "apply",
            enum=["apply", "bootstrap", "bootstrap-replace"],
            title="Mode",
            description="bootstrap: copy the source first (the sink table must be empty); "
            "bootstrap-replace: truncate the sink table, then copy.",
        ),
        "dry_run": Param(
            False,
            type="boolean",
            title="Dry run",
            description="Check everything and say what the run would do (which table a "
            "bootstrap would truncate, which range it would apply); write nothing.",
        ),
    },
)
def cdc_replication() -> None:
    @task(doc_md="The tables this run replicates.")
    def plan(params=None):
        return steps.replication_plan(params)

    @task(
        doc_md="Bootstrap a new sink table, apply the lake's changes, one Asset event.",
        outlets=[REPLICATIONS],
    )
    def replicate(table, params=None, run_id=None, outlet_events=None):
        return steps.replicate_table(params, table, run_id, outlet_events, REPLICATIONS)

    replicate.expand_kwargs(plan())


cdc_replication()
