"""Task bodies of ``cdc_replication``: typed Params in, one replication call, typed
results out (the DAG hands them to :func:`~cdcgen.airflow.xcom.to_xcom`).

The sink is the ``cdcgen_sink`` connection: its hosts, port, login and password, TLS
extras like a source connection's, and ``sink_keyspace`` (where the tables go, same
names; a comma-separated list allows the run's Param to pick another of them, the first
is the default) and ``replicated_tables`` (``ks.t,...``). A run's Params may narrow
what the connection configures, never widen it: a UI user cannot point a run at a
table or keyspace the connection's owner did not name. The lake and the changes
pipeline's progress are the ``cdc_source`` side's.

A bootstrap's copy never runs in a task's own process: the plan gives each table that
needs one (the ``mode`` Param asks, or its sink table was never bootstrapped, or its
copy is unfinished) the arguments and environment of the Spark job
``spark/replication_bootstrap.py``, which ``ReplicationBootstrapOperator`` submits (it
skips the others); the apply then only applies, and refuses a sink still not
bootstrapped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from cdcgen.airflow.connections import DEFAULT_CONNECTIONS, SINK_CONN_ID, ClusterConnections
from cdcgen.airflow.failures import fail_fast
from cdcgen.airflow.generation_steps import run_config
from cdcgen.airflow.hooks import CdcSourceHook
from cdcgen.airflow.run_params import RunParams
from cdcgen.errors import ConfigError

if TYPE_CHECKING:
    from cdcgen.config import PipelineConfig
    from cdcgen.core.replication_record import ReplicationRecord
    from cdcgen.pipeline.replication_summary import ReplicationRunSummary
    from cdcgen.replication.replication_run import Mode


#: XCom key under which each table's apply records its run, rejected changes or not.
RECORD_KEY = "replication_record"


@dataclass(frozen=True)
class PlannedReplication:
    """A table the plan hands its mapped task group (``expand_kwargs``): the table, and
    its bootstrap job's arguments (empty: no bootstrap) and environment (no credential:
    they pass through XCom)."""

    table: str
    spark_args: tuple[str, ...]
    env_vars: dict[str, str]


def _sink(params: RunParams, conn_id: str) -> tuple[PipelineConfig, str, list[str]]:
    """The sink's configuration, its keyspace and the tables to replicate, the run's
    Params within what the connection configures."""
    sink = CdcSourceHook(cdc_conn_id=conn_id).get_config()
    keyspace, tables = sink_targets(
        str(sink.extra.get("sink_keyspace") or ""),
        str(sink.extra.get("replicated_tables") or ""),
        params.sink_keyspace,
        params.tables,
        conn_id,
    )
    return sink, keyspace, tables


def sink_targets(
    keyspaces: str,
    tables: str,
    asked_keyspace: str,
    asked_tables: str,
    conn_id: str = SINK_CONN_ID,
) -> tuple[str, list[str]]:
    """The run's sink keyspace and tables: the connection's (``keyspaces``: the first of
    a comma-separated list), or what the Params ask among them; anything else is refused
    by name (:class:`ConfigError`)."""
    from cdcgen.core.cdc_log import TableRef

    allowed_keyspaces = [k.strip() for k in keyspaces.split(",") if k.strip()]
    allowed = [t.qualified for t in TableRef.parse_list(tables)]
    if not allowed_keyspaces or not allowed:
        raise ConfigError(
            f"connection {conn_id}: set the extras sink_keyspace and replicated_tables "
            "(the run's Params may only narrow them)"
        )
    keyspace = asked_keyspace.strip() or allowed_keyspaces[0]
    if keyspace not in allowed_keyspaces:
        raise ConfigError(
            f"sink keyspace {keyspace!r} is not one the connection {conn_id} allows "
            f"(its extra sink_keyspace: {', '.join(allowed_keyspaces)})"
        )
    chosen = [t.qualified for t in TableRef.parse_list(asked_tables)] or allowed
    outside = [t for t in chosen if t not in allowed]
    if outside:
        raise ConfigError(
            f"table(s) {', '.join(outside)} are not replicated by the connection "
            f"{conn_id} (its extra replicated_tables: {', '.join(allowed)})"
        )
    return keyspace, chosen


def mode_param(params: RunParams) -> Mode:
    """The run's ``mode`` Param: ``apply`` still bootstraps a sink table that needs it
    (never bootstrapped, or its copy unfinished); one the DAG does not know is refused
    by name."""
    from cdcgen.replication.replication_run import Mode

    modes = {
        "apply": Mode.BOOTSTRAP_IF_NEEDED,
        "bootstrap": Mode.BOOTSTRAP,
        "bootstrap-replace": Mode.BOOTSTRAP_REPLACE,
    }
    asked = modes.get(params.mode)
    if asked is None:
        known = ", ".join(modes)
        raise ConfigError(f"Param mode {params.mode!r}: expected one of {known}")
    return asked


@fail_fast
def replication_plan(
    params: RunParams, run_id: str, connections: ClusterConnections = DEFAULT_CONNECTIONS
) -> list[PlannedReplication]:
    """One mapped task group per table: ``table``, and the bootstrap job's ``spark_args``
    (empty: no bootstrap) and ``env_vars`` (no credential: they pass through XCom)."""
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.sink_state import CqlSinkState
    from cdcgen.core.cdc_log import TableRef
    from cdcgen.core.replication_plan import SinkProgress
    from cdcgen.pipeline.result_files import result_path
    from cdcgen.replication.replication_run import Mode, needs_bootstrap, sink_variables
    from cdcgen.replication.settings import ReplicationSettings
    from cdcgen.spark_runtime.session import submit_env

    config = run_config(params, connections.source)
    sink_config, keyspace, tables = _sink(params, connections.sink)
    mode = mode_param(params)
    env = {
        **submit_env(),
        **config.to_env(),
        **ReplicationSettings.from_env().to_env(),
        **sink_variables(sink_config),
    }
    planned: list[PlannedReplication] = []
    with client_for(sink_config) as sink:
        for table in tables:
            source = TableRef.parse(table)
            state = CqlSinkState(sink, source, TableRef(keyspace, source.table))
            progress = state.progress() if state.exists() else SinkProgress(source, state.sink)
            copy = state.copy_progress()
            boot = not params.dry_run and needs_bootstrap(mode, progress, copy)
            arguments = {
                "--table": table,
                "--sink-table": state.sink.qualified,
                "--run-id": run_id,
                "--output": str(result_path(config.report_dir, run_id, f"bootstrap-{table}")),
            }
            args = [part for pair in arguments.items() for part in pair]
            if mode is Mode.BOOTSTRAP_REPLACE:
                args.append("--replace")
            planned.append(PlannedReplication(table, tuple(args) if boot else (), env))
    return planned


@fail_fast
def replicate_table(
    params: RunParams,
    table: str,
    run_id: str,
    outlet_events: Any = None,
    alias: Any = None,
    connections: ClusterConnections = DEFAULT_CONNECTIONS,
    ti: Any = None,
    follow: timedelta | None = None,
) -> ReplicationRecord:
    """Apply the lake's changes (after the bootstrap job, when the plan ran one), emit its
    Asset event; fails (not retried) on a sink that must be (re-)bootstrapped, and after
    the event when a change was rejected. The record goes to XCom under
    :data:`RECORD_KEY` either way, for the run's summary. With the ``dry_run`` Param, says
    what the run would do (which table a bootstrap would truncate) and writes nothing.
    With ``follow``, applies cycle by cycle that long (:mod:`cdcgen.replication.sink_follow`;
    a dry run is one cycle)."""
    from cdcgen.adapters.cql import client_for
    from cdcgen.airflow import lineage
    from cdcgen.airflow.assets import replicated_table
    from cdcgen.core.follow_loop import FollowPace
    from cdcgen.replication.cql_ports import cql_ports
    from cdcgen.replication.errors import ChangesRejected
    from cdcgen.replication.replication_run import Mode, Replication, ReplicationRequest, replicate
    from cdcgen.replication.settings import ReplicationSettings
    from cdcgen.replication.sink_follow import follow_replication

    config = run_config(params, connections.source)
    sink_config, keyspace, tables = _sink(params, connections.sink)
    dry_run = params.dry_run
    started = datetime.now(UTC)
    if table not in tables:
        raise ConfigError(f"table {table} is not among this run's tables")
    job = Replication.of(table, sink_keyspace=keyspace)
    # Only a dry run may plan a bootstrap here; the copy itself is the Spark job's.
    mode = mode_param(params) if dry_run else Mode.APPLY
    request = ReplicationRequest(job, run_id, mode, dry_run=dry_run)
    settings = ReplicationSettings.from_env()
    with client_for(config) as source, client_for(sink_config) as sink:
        ports = cql_ports(config, source, sink, settings, sink_config=sink_config)
        if follow is None or dry_run:
            record = replicate(config, ports, request)
        else:
            pace = FollowPace(started + follow, settings.follow_every)
            record = follow_replication(config, ports, request, pace)
    if ti is not None:
        ti.xcom_push(key=RECORD_KEY, value=record.to_json())
    if dry_run:
        return record
    lineage.report_replication(config, sink_config, table, job.sink)
    if outlet_events is not None and alias is not None:
        extra = {
            "source_table": record.source_table,
            "sink_table": record.sink_table,
            "consistent_until": record.consistent_until,
            "lag_seconds": record.lag_seconds,
            "applied_log_rows": record.applied_log_rows,
        }
        outlet_events[alias].add(
            replicated_table(connections.sink, job.sink.qualified), extra=extra
        )
    if record.rejected_count:
        raise ChangesRejected(
            f"{job.sink}: {record.rejected_count} change(s) not applied, recorded in "
            f"{job.sink.keyspace}.cdc_replication_rejects: "
            + "; ".join(f"{r.cdc_time}: {r.reason}" for r in record.rejected[:5])
        )
    return record


@fail_fast
def replication_summary(
    params: RunParams,
    run_id: str,
    planned: Sequence[PlannedReplication] | None,
    ti: Any,
    connections: ClusterConnections = DEFAULT_CONNECTIONS,
) -> ReplicationRunSummary:
    """Every planned table's record in one summary (also a JSON file, but for a dry run,
    which writes nothing); fails the run naming each table that has none or whose sink
    rejected changes. Runs whatever happened upstream, as the other DAGs' last tasks do."""
    from pathlib import Path

    from cdcgen.airflow import metrics
    from cdcgen.core.replication_record import ReplicationRecord
    from cdcgen.pipeline.errors import RunIncomplete
    from cdcgen.pipeline.replication_summary import SUMMARIES_DIR, replication_run_summary
    from cdcgen.pipeline.run_summary import write_summary

    config = run_config(params, connections.source)
    pulled = ti.xcom_pull(task_ids=["table.apply"], key=RECORD_KEY) or []
    records = [ReplicationRecord.from_json(value) for value in pulled if value]
    tables = None if planned is None else [item.table for item in planned]
    summary = replication_run_summary(run_id, tables, records)
    if not params.dry_run:  # a dry run changes nothing: no summary, no metrics
        write_summary(Path(config.report_dir) / SUMMARIES_DIR, summary)
        metrics.record(metrics.replication_points(summary, connections.source), ti)
    if summary.problems:
        raise RunIncomplete("; ".join(summary.problems))
    return summary
