"""One replication run of one table, and one bootstrap: what the CLI and the DAG call.

A run reads where the lake stands for the source table (its watermark, the lake
version holding it, and since when it is complete: the changes pipeline's progress on
the source cluster) and where the sink stands (its state, on the sink), applies the
range between, moving the sink's consistency point with each applied slice up to the
watermark. Its record, with the consistency point and the lag, is kept under the report
directory (``replication/<sink table>/``) for the replication page, and returned for the
Asset event and XCom: it holds names, times and counts, never a credential.

Before anything is written, a run refuses a sink that is its own source (the same table
on the same cluster, known by its name and its hosts' ids: a bootstrap there would
truncate the source) and a sink keyspace of the database's own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.clocks import clock_reader_for
from cdcgen.adapters.delta_tables import delta_table, is_delta
from cdcgen.changes.layout import table_root
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.identifiers import check_writable_keyspace
from cdcgen.core.replication_plan import (
    LakeCoverage,
    ReplicationError,
    SinkProgress,
    plan_apply,
    snapshot_time,
)
from cdcgen.replication.apply import SinkApplier
from cdcgen.replication.bootstrap import SnapshotCopy, bootstrap, plan_bootstrap, sink_is_empty
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.replication.sink_schema import SinkShape, TableDefinition, sink_shape
from cdcgen.replication.sink_state import CqlSinkState
from cdcgen.reports.site import record_replication

if TYPE_CHECKING:
    import pyarrow as pa

    from cdcgen.adapters.cql import CqlClient
    from cdcgen.adapters.lake_store import LakeRoot
    from cdcgen.config import PipelineConfig

log = logging.getLogger(__name__)


class Mode(StrEnum):
    """What a run does before it applies: nothing, a bootstrap of an empty sink table,
    or a bootstrap that first truncates the sink table."""

    APPLY = "apply"
    BOOTSTRAP = "bootstrap"
    BOOTSTRAP_REPLACE = "bootstrap-replace"


@dataclass(frozen=True)
class Replication:
    """One source table replicated into one sink table."""

    source: TableRef
    sink: TableRef

    def __post_init__(self) -> None:
        check_writable_keyspace(self.sink.keyspace, "sink keyspace")

    @classmethod
    def of(cls, table: str, sink_table: str | None = None, sink_keyspace: str | None = None
           ) -> Replication:  # fmt: skip
        source = TableRef.parse(table)
        if sink_table:
            return cls(source, TableRef.parse(sink_table))
        return cls(source, TableRef(sink_keyspace or source.keyspace, source.table))


def cluster_identity(client: CqlClient) -> tuple[str, frozenset[str]]:
    """A cluster's name and its hosts' ids, as the driver knows them."""
    metadata = client.cluster.metadata
    hosts = frozenset(str(h.host_id) for h in metadata.all_hosts() if h.host_id is not None)
    return str(metadata.cluster_name), hosts


def check_not_source(source_client: CqlClient, sink_client: CqlClient, job: Replication) -> None:
    """Refuse a sink table that is the source table itself: same table, and a cluster of
    the same name sharing a host (two sessions to one cluster)."""
    if job.source != job.sink:
        return
    source_name, source_hosts = cluster_identity(source_client)
    sink_name, sink_hosts = cluster_identity(sink_client)
    if source_name == sink_name and source_hosts & sink_hosts:
        raise ReplicationError(
            f"the sink {job.sink} is the source table itself (cluster {sink_name!r}): "
            "replicating a table into itself would overwrite it, and a bootstrap would "
            "truncate it. Name another sink keyspace or table, or set the sink cluster "
            "(the cdcgen_sink connection, or CDCGEN_SINK_CONTACT_POINTS)"
        )


def lake_coverage(config: PipelineConfig, client: CqlClient, table: TableRef) -> LakeCoverage:
    progress = CqlCheckpointStore(client, config.checkpoint_keyspace).progress(table)
    return LakeCoverage(progress.complete_since, progress.watermark, progress.lake_version)


def lake_types(lake: LakeRoot, table: TableRef) -> dict[str, pa.DataType]:
    """The lake's column types of ``table``'s changes (none before its first write)."""
    import pyarrow as pa

    root = table_root(lake, table)
    if not is_delta(root):
        return {}
    schema = pa.schema(delta_table(root).schema())
    return {f.name: f.type for f in schema}


def shape_of(
    source_client: CqlClient, sink_client: CqlClient, job: Replication, lake: LakeRoot
) -> SinkShape:
    """The sink table checked against the source table's definition and the lake's."""
    source = table_definition(source_client, job.source)
    if source is None:
        raise ReplicationError(f"{job.source} does not exist on the source cluster")
    sink = table_definition(sink_client, job.sink)
    return sink_shape(source, job.sink, sink, lake_types(lake, job.source))


def table_definition(client: CqlClient, table: TableRef) -> TableDefinition | None:
    """The driver's current definition of ``table`` (None: no such table)."""
    from cdcgen.core.replication import quote

    client.cluster.refresh_table_metadata(table.keyspace, table.table)
    keyspace = client.cluster.metadata.keyspaces.get(table.keyspace)
    metadata = None if keyspace is None else keyspace.tables.get(table.table)
    if metadata is None:
        return None
    columns = ", ".join(quote(name) for name in metadata.columns)
    select = client.prepared(f"SELECT {columns} FROM {quote(table.keyspace)}.{quote(table.table)}")
    cqltypes = {column[2]: column[3] for column in select.result_metadata}
    return TableDefinition.from_driver(table, metadata, keyspace, cqltypes)


def replicate(
    config: PipelineConfig,
    source_client: CqlClient,
    sink_client: CqlClient,
    job: Replication,
    run_id: str,
    settings: ReplicationSettings | None = None,
    *,
    mode: Mode = Mode.APPLY,
    bootstrap_new: bool = False,
    dry_run: bool = False,
    peer_lake: LakeRoot | None = None,
    on_applied: Callable[[Sequence[dict[str, Any]]], None] | None = None,
) -> dict[str, Any]:
    """Apply what the lake holds beyond the sink's consistency point; the run's record.

    First, with a bootstrap ``mode``, or with ``bootstrap_new`` when the sink was never
    bootstrapped (the design's new sink over a source with data), a snapshot. The sink
    table's own changes, when a lake holds them (``peer_lake``, default: this lake),
    filter out what it received from here (active-active,
    :mod:`cdcgen.replication.peers`). A ``dry_run`` writes nothing: it returns the
    bootstrap's dry run when one would happen, else the range the run would apply.
    """
    settings = settings or ReplicationSettings()
    started = datetime.now(UTC)
    check_not_source(source_client, sink_client, job)
    state = CqlSinkState(sink_client, job.source, job.sink)
    if not dry_run:
        state.ensure_schema()
    before = state.progress() if state.exists() else SinkProgress(job.source, job.sink)
    copied = None
    if mode is not Mode.APPLY or (bootstrap_new and before.consistent_until is None):
        replace = mode is Mode.BOOTSTRAP_REPLACE
        copied = bootstrap_sink(
            config, source_client, sink_client, job, run_id, replace, dry_run=dry_run
        )
        if dry_run:
            return copied
        before = state.progress()
    plan = plan_apply(before, lake_coverage(config, source_client, job.source))
    record = _record(job, run_id, started, before)
    if dry_run:
        shape_of(source_client, sink_client, job, config.lake_path)  # refuses as a run would
        record.update(
            dry_run=True,
            would_apply_from=plan.since.isoformat(),
            would_apply_until=plan.until.isoformat(),
            ended_at=datetime.now(UTC).isoformat(),
            rejected=[],
            status="dry-run",
        )
        return record
    if copied is not None:
        record["bootstrap"] = {k: copied[k] for k in ("bootstrapped_at", "copied_rows")}
    if plan.empty:
        log.info("%s: nothing new in the lake beyond %s", job.sink, plan.since)
        return _finish(config, record, before, 0, 0, [])
    shape = shape_of(source_client, sink_client, job, config.lake_path)
    peer = table_root(peer_lake or config.lake_path, job.sink)
    applier = SinkApplier(
        sink_client, shape, state, run_id, settings,
        peer=peer if is_delta(peer) else None, on_applied=on_applied,
    )  # fmt: skip
    outcome = applier.apply(table_root(config.lake_path, job.source), plan)
    state.save_progress(plan.until, run_id, plan.lake_version)
    record.update(
        applied_from=plan.since.isoformat(),
        lake_version=plan.lake_version,
        peer_log_rows_skipped=outcome.peer_rows,
        slices=outcome.slices,
        largest_slice_rows=outcome.largest_slice,
        applied_operations=dict(sorted(outcome.operations.items())),
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
    *,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Copy the source table into the sink at a time the source's clocks give; the
    bootstrap's record. A ``dry_run`` makes every check and says what the bootstrap
    would do (which table it would truncate), writing nothing."""
    started = datetime.now(UTC)
    check_not_source(source_client, sink_client, job)
    state = CqlSinkState(sink_client, job.source, job.sink)
    if not dry_run:
        state.ensure_schema()
    shape = shape_of(source_client, sink_client, job, config.lake_path)
    clocks = clock_reader_for(source_client, config).read_clocks()
    at = snapshot_time(clocks, config.confidence_window, config.generation_leeway)
    before = state.progress() if state.exists() else SinkProgress(job.source, job.sink)
    plan = plan_bootstrap(
        job.source,
        job.sink,
        at,
        lake_since=lake_coverage(config, source_client, job.source).since,
        current=before.consistent_until,
        sink_empty=sink_is_empty(sink_client, shape),
        replace=replace,
    )
    record = _record(job, run_id, started, before)
    if dry_run:
        record.update(
            kind="bootstrap",
            dry_run=True,
            snapshot_at=at.isoformat(),
            would_truncate=job.sink.qualified if plan.truncate else None,
            sink_cluster=cluster_identity(sink_client)[0],
            ended_at=datetime.now(UTC).isoformat(),
            rejected=[],
            status="dry-run",
        )
        return record
    copy = SnapshotCopy(source_client, sink_client, job.source, shape)
    outcome = bootstrap(copy, state, plan, run_id)
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
