"""One replication run of one table, and one bootstrap: what the CLI and the DAG call.

A run reads where the lake stands for the source table (its watermark, the lake
version holding it, and since when it is complete: the changes pipeline's progress on
the source cluster) and where the sink stands (its state, on the sink), applies the
range between, then moves the sink's consistency point to the watermark. Its record,
with the consistency point and the lag, is kept under the report directory
(``replication/<sink table>/``) for the replication page, and returned for the Asset
event and XCom: it holds names, times and counts, never a credential.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.delta_tables import is_delta
from cdcgen.changes.layout import table_root
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.replication_plan import (
    LakeCoverage,
    ReplicationError,
    SinkProgress,
    plan_apply,
)
from cdcgen.replication.apply import SinkApplier
from cdcgen.replication.bootstrap import SnapshotCopy, bootstrap, snapshot_time
from cdcgen.replication.lake_changes import CHUNK_ROWS
from cdcgen.replication.sink_schema import SinkShape, sink_shape
from cdcgen.replication.sink_state import CqlSinkState
from cdcgen.reports.site import record_replication

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.adapters.lake_store import LakeRoot
    from cdcgen.config import PipelineConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Replication:
    """One source table replicated into one sink table."""

    source: TableRef
    sink: TableRef

    @classmethod
    def of(cls, table: str, sink_table: str | None = None, sink_keyspace: str | None = None
           ) -> Replication:  # fmt: skip
        source = TableRef.parse(table)
        if sink_table:
            return cls(source, TableRef.parse(sink_table))
        return cls(source, TableRef(sink_keyspace or source.keyspace, source.table))


def lake_coverage(config: PipelineConfig, client: CqlClient, table: TableRef) -> LakeCoverage:
    progress = CqlCheckpointStore(client, config.checkpoint_keyspace).progress(table)
    return LakeCoverage(progress.complete_since, progress.watermark, progress.lake_version)


def shape_of(source_client: CqlClient, sink_client: CqlClient, job: Replication) -> SinkShape:
    """The sink table checked against the source table's columns."""
    source = _table_metadata(source_client, job.source)
    if source is None:
        raise ReplicationError(f"{job.source} does not exist on the source cluster")
    return sink_shape(job.sink, _table_metadata(sink_client, job.sink), list(source.columns))


def _table_metadata(client: CqlClient, table: TableRef) -> Any:
    """The driver's current definition of ``table`` (None: no such table)."""
    client.cluster.refresh_table_metadata(table.keyspace, table.table)
    keyspace = client.cluster.metadata.keyspaces.get(table.keyspace)
    return None if keyspace is None else keyspace.tables.get(table.table)


#: What a run does first: nothing, a bootstrap, or a bootstrap replacing the sink's rows.
MODES = ("apply", "bootstrap", "bootstrap-replace")


def replicate(
    config: PipelineConfig,
    source_client: CqlClient,
    sink_client: CqlClient,
    job: Replication,
    run_id: str,
    chunk_rows: int = CHUNK_ROWS,
    *,
    bootstrap: str = "apply",
    bootstrap_new: bool = False,
    peer_lake: LakeRoot | None = None,
    on_applied: Callable[[Sequence[dict[str, Any]]], None] | None = None,
) -> dict[str, Any]:
    """Apply what the lake holds beyond the sink's consistency point; the run's record.

    First, with ``bootstrap`` (:data:`MODES`), or with ``bootstrap_new`` when the sink
    was never bootstrapped (the design's new sink over a source with data), a snapshot.
    The sink table's own changes, when a lake holds them (``peer_lake``, default: this
    lake), filter out what it received from here (active-active,
    :mod:`cdcgen.replication.peers`).
    """
    if bootstrap not in MODES:
        raise ValueError(f"mode {bootstrap!r}: expected one of {', '.join(MODES)}")
    started = datetime.now(UTC)
    state = CqlSinkState(sink_client, job.source, job.sink)
    state.ensure_schema()
    before = state.progress()
    copied = None
    if bootstrap != "apply" or (bootstrap_new and before.consistent_until is None):
        replace = bootstrap == "bootstrap-replace"
        copied = bootstrap_sink(config, source_client, sink_client, job, run_id, replace)
        before = state.progress()
    plan = plan_apply(
        before, lake_coverage(config, source_client, job.source), state.applied_until()
    )
    record = _record(job, run_id, started, before)
    if copied is not None:
        record["bootstrap"] = {k: copied[k] for k in ("bootstrapped_at", "copied_rows")}
    if plan.empty:
        log.info("%s: nothing new in the lake beyond %s", job.sink, plan.since)
        return _finish(config, record, before, 0, 0, [])
    shape = shape_of(source_client, sink_client, job)
    peer = table_root(peer_lake or config.lake_path, job.sink)
    applier = SinkApplier(
        sink_client, shape, state, run_id, chunk_rows=chunk_rows,
        peer=peer if is_delta(peer) else None, on_applied=on_applied,
    )  # fmt: skip
    outcome = applier.apply(table_root(config.lake_path, job.source), plan)  # none: empty
    state.save_progress(plan.until, run_id, plan.lake_version)
    record.update(
        applied_from=plan.since.isoformat(),
        lake_version=plan.lake_version,
        peer_log_rows_skipped=outcome.peer_rows,
    )
    return _finish(
        config, record, state.progress(), outcome.log_rows, outcome.batches, outcome.rejected
    )


def bootstrap_sink(
    config: PipelineConfig,
    source_client: CqlClient,
    sink_client: CqlClient,
    job: Replication,
    run_id: str,
    replace: bool = False,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Copy the source table into the sink at a recorded time; the bootstrap's record."""
    started = datetime.now(UTC)
    state = CqlSinkState(sink_client, job.source, job.sink)
    state.ensure_schema()
    at = snapshot_time(now or started, config.confidence_window, config.generation_leeway)
    shape = shape_of(source_client, sink_client, job)
    copy = SnapshotCopy(source_client, sink_client, job.source, shape)
    coverage = lake_coverage(config, source_client, job.source)
    before = state.progress()
    outcome = bootstrap(copy, state, at, coverage.since, before.consistent_until, run_id, replace)
    record = _record(job, run_id, started, before)
    record.update(kind="bootstrap", copied_rows=outcome.rows, truncated=outcome.truncated)
    return _finish(config, record, state.progress(), 0, 0, [])


def _record(
    job: Replication, run_id: str, started: datetime, progress: SinkProgress
) -> dict[str, Any]:
    return {
        "kind": "apply",
        "source_table": job.source.qualified,
        "sink_table": job.sink.qualified,
        "run_id": run_id,
        "started_at": started.isoformat(),
        "consistent_from": _iso(progress.consistent_until),
    }


def _finish(
    config: PipelineConfig,
    record: dict[str, Any],
    progress: SinkProgress,
    log_rows: int,
    batches: int,
    rejected: list[dict[str, Any]],
) -> dict[str, Any]:
    ended = datetime.now(UTC)
    lag = progress.lag(ended)
    record.update(
        ended_at=ended.isoformat(),
        consistent_until=_iso(progress.consistent_until),
        bootstrapped_at=_iso(progress.bootstrapped_at),
        lag_seconds=None if lag is None else round(lag, 3),
        applied_log_rows=log_rows,
        applied_batches=batches,
        rejected=rejected,
        status="rejected" if rejected else "ok",
    )
    record_replication(config.report_dir, record)
    return record


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


#: ``CDCGEN_SINK_<X>`` sets ``CDCGEN_<X>`` for the sink's session (hosts, port,
#: credentials, TLS); unset, the sink is the source cluster.
SINK_PREFIX = "CDCGEN_SINK_"


def sink_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment the sink's configuration is read from."""
    merged = dict(env)
    sink = {k[len(SINK_PREFIX) :]: v for k, v in env.items() if k.startswith(SINK_PREFIX)}
    if "USERNAME" in sink or "PASSWORD" in sink or "PASSWORD_FILE" in sink:
        for name in ("USERNAME", "PASSWORD", "PASSWORD_FILE"):
            merged.pop(f"CDCGEN_{name}", None)
    merged.update({f"CDCGEN_{k}": v for k, v in sink.items()})
    return merged
