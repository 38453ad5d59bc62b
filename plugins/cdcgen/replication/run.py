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

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.changes.layout import table_root
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.replication_plan import LakeCoverage, SinkProgress, plan_apply
from cdcgen.core.user_text import file_name
from cdcgen.replication.apply import CHUNK_ROWS, SinkApplier, lake_base_columns
from cdcgen.replication.bootstrap import SnapshotCopy, bootstrap, snapshot_time
from cdcgen.replication.sink_schema import SinkShape, sink_shape
from cdcgen.replication.sink_state import CqlSinkState

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig

log = logging.getLogger(__name__)

#: Under the report directory: one folder per sink table, one record per run.
RECORDS_DIR = "replication"


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


def shape_of(config: PipelineConfig, sink_client: CqlClient, job: Replication) -> SinkShape:
    """The sink table checked against the source's columns as the lake holds them."""
    from cdcgen.adapters.delta_tables import delta_table

    lake_columns = delta_table(table_root(config.lake_path, job.source)).schema().fields
    columns = lake_base_columns([f.name for f in lake_columns])
    sink_client.cluster.refresh_table_metadata(job.sink.keyspace, job.sink.table)
    keyspace = sink_client.cluster.metadata.keyspaces.get(job.sink.keyspace)
    metadata = None if keyspace is None else keyspace.tables.get(job.sink.table)
    return sink_shape(job.sink, metadata, columns)


def replicate(
    config: PipelineConfig,
    source_client: CqlClient,
    sink_client: CqlClient,
    job: Replication,
    run_id: str,
    chunk_rows: int = CHUNK_ROWS,
) -> dict[str, Any]:
    """Apply what the lake holds beyond the sink's consistency point; the run's record."""
    started = datetime.now(UTC)
    state = CqlSinkState(sink_client, job.source, job.sink)
    state.ensure_schema()
    before = state.progress()
    plan = plan_apply(
        before, lake_coverage(config, source_client, job.source), state.applied_until()
    )
    record = _record(job, run_id, started, before)
    if plan.empty:
        log.info("%s: nothing new in the lake beyond %s", job.sink, plan.since)
        return _finish(config, record, before, 0, 0, [])
    shape = shape_of(config, sink_client, job)
    applier = SinkApplier(sink_client, shape, state, run_id, chunk_rows=chunk_rows)
    outcome = applier.apply(table_root(config.lake_path, job.source), plan)
    state.save_progress(plan.until, run_id, plan.lake_version)
    record.update(applied_from=plan.since.isoformat(), lake_version=plan.lake_version)
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
    copy = SnapshotCopy(source_client, sink_client, job.source, shape_of(config, sink_client, job))
    coverage = lake_coverage(config, source_client, job.source)
    outcome = bootstrap(copy, state, at, coverage.since, run_id, replace)
    record = _record(job, run_id, started, state.progress())
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
    save_record(config.report_dir, record)
    return record


def save_record(report_dir: Path, record: dict[str, Any]) -> Path:
    from cdcgen.reports.site import write_atomic

    folder = Path(report_dir) / RECORDS_DIR / file_name(record["sink_table"])
    path = folder / f"{record['ended_at'].replace(':', '')}-{file_name(record['run_id'])}.json"
    write_atomic(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path


def load_records(report_dir: Path) -> list[dict[str, Any]]:
    """Every run record, by sink table then time."""
    root = Path(report_dir) / RECORDS_DIR
    records = []
    for path in sorted(root.glob("*/*.json")) if root.is_dir() else []:
        try:
            records.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            log.warning("unreadable replication record %s: %s", path, exc)
    return records


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
