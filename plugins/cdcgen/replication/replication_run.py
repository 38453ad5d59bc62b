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

Everything a run talks to is a port (:class:`ReplicationPorts`, as the changes run's
``ChangesPorts``): the clusters' tables, the sink's writes and state, the lake, the
source's checkpoints and clocks, and the Spark jobs; :func:`cdcgen.replication.cql_ports.
cql_ports` builds them over cassandra-driver, Delta and Spark.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.errors import ReplicationError, SnapshotClockUnreadable
from cdcgen.core.identifiers import check_writable_keyspace
from cdcgen.core.replication_plan import LakeCoverage, SinkProgress, plan_apply, snapshot_time
from cdcgen.core.replication_record import (
    BootstrapDone,
    RejectedEntry,
    ReplicationRecord,
    ReplicationRunStatus,
)
from cdcgen.core.time import iso_millis
from cdcgen.ports import (
    CheckpointStore,
    ClockReader,
    LakeChanges,
    SinkState,
    SinkStates,
    SinkWrites,
    TableSchemas,
)
from cdcgen.replication.apply import AppliedHook, SinkApplier, SliceApply
from cdcgen.replication.bootstrap import (
    BootstrapPlan,
    TableCopy,
    bootstrap,
    check_no_copy,
    plan_bootstrap,
    plan_resume,
)
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.replication.sink_columns import (
    add_sink_columns,
    columns_to_add,
    with_columns,
    with_dropped_columns,
)
from cdcgen.replication.sink_schema import SinkShape, sink_shape
from cdcgen.reports.site import record_replication

if TYPE_CHECKING:
    from cdcgen.config import PipelineConfig
    from cdcgen.core.copy_progress import CopyProgress

log = logging.getLogger(__name__)


class Mode(StrEnum):
    """What a run does before it applies, one choice where two flags could contradict:
    nothing (a sink never bootstrapped, or whose copy is unfinished, is refused: the DAG's
    apply, once its plan ran the copy), a bootstrap only when the sink needs one (never
    bootstrapped, or a copy left unfinished: what a DAG run in ``apply`` mode does), a
    bootstrap of an empty sink table, or one that first truncates the sink table."""

    APPLY = "apply"
    BOOTSTRAP_IF_NEEDED = "bootstrap-if-needed"
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


@dataclass(frozen=True)
class ReplicationRequest:
    """What to replicate, under which run, what to do before applying, and whether to
    write at all (a ``dry_run`` makes every check and says what it would do)."""

    job: Replication
    run_id: str
    mode: Mode = Mode.APPLY
    dry_run: bool = False


class SparkJobs(Protocol):
    """The run's Spark jobs: a bootstrap's copy, and the apply's slices on executors."""

    def check_clusters(self) -> None:
        """Refuse a copy whose tasks would reach other clusters than the run's."""
        ...

    def copier(self, job: Replication, shape: SinkShape) -> TableCopy:
        """The copy of ``job``'s source table into its sink."""
        ...

    def slice_apply(self, job: Replication, shape: SinkShape, run_id: str) -> SliceApply | None:
        """Where each slice is applied instead of the run's process (None: in it)."""
        ...


@dataclass(frozen=True)
class ReplicationPorts:
    """Everything a run talks to, built by its caller
    (:func:`cdcgen.replication.cql_ports.cql_ports`): the source's and the sink's tables,
    the sink's writes and each table's state there, the changes lake, the source
    cluster's checkpoints (how far the lake holds each table) and clocks (a snapshot's
    time), the Spark jobs; ``on_applied`` is told of each chunk applied in this process."""

    source: TableSchemas
    sink: TableSchemas
    writes: SinkWrites
    states: SinkStates
    lake: LakeChanges
    checkpoints: CheckpointStore
    source_clocks: ClockReader
    spark: SparkJobs
    settings: ReplicationSettings = field(default_factory=ReplicationSettings)
    on_applied: AppliedHook | None = None


def check_not_source(ports: ReplicationPorts, job: Replication) -> None:
    """Refuse a sink table that is the source table itself: same table, and a cluster of
    the same name sharing a host (two sessions to one cluster)."""
    if job.source != job.sink:
        return
    source, sink = ports.source.identity(), ports.sink.identity()
    if source.name == sink.name and source.hosts & sink.hosts:
        raise ReplicationError(
            f"the sink {job.sink} is the source table itself (cluster {sink.name!r}): "
            "replicating a table into itself would overwrite it, and a bootstrap would "
            "truncate it. Name another sink keyspace or table, or set the sink cluster "
            "(the cdcgen_sink connection, or CDCGEN_SINK_CONTACT_POINTS)"
        )


def lake_coverage(checkpoints: CheckpointStore, table: TableRef) -> LakeCoverage:
    progress = checkpoints.progress(table)
    return LakeCoverage(progress.complete_since, progress.watermark, progress.lake_version)


def shape_of(
    ports: ReplicationPorts,
    job: Replication,
    *,
    dry_run: bool = False,
    keep_dropped: bool = True,
) -> SinkShape:
    """The sink table checked against the source table's definition and the lake's.

    With the setting ``add_columns``, the source's columns the sink lacks are added to it
    first (:mod:`cdcgen.replication.sink_columns`; a ``dry_run`` checks the sink as it
    would be, and changes nothing); with ``keep_dropped``, the source's dropped columns
    the sink and the lake still hold keep being replayed."""
    source = ports.source.definition(job.source)
    if source is None:
        raise ReplicationError(f"{job.source} does not exist on the source cluster")
    sink = ports.sink.definition(job.sink)
    if sink is not None and ports.settings.add_columns:
        missing = columns_to_add(source, sink)
        if missing and dry_run:
            sink = with_columns(source, sink, missing)
        elif missing:
            add_sink_columns(ports.sink, source, sink, missing)
            sink = ports.sink.definition(job.sink)
    types = ports.lake.column_types(job.source)
    if sink is not None and keep_dropped:
        source = with_dropped_columns(source, sink, set(types))
    return sink_shape(source, job.sink, sink, types)


def replicate(
    config: PipelineConfig, ports: ReplicationPorts, request: ReplicationRequest
) -> ReplicationRecord:
    """Apply what the lake holds beyond the sink's consistency point; the run's record.

    First, with a bootstrap ``request.mode``, or :attr:`Mode.BOOTSTRAP_IF_NEEDED` when
    the sink needs one (never bootstrapped: the design's new sink over a source with
    data; or a copy left unfinished), a snapshot (:func:`bootstrap_sink`). Without, a
    sink whose copy is unfinished is refused. The sink table's own changes, when the
    lake holds them, filter out what it received from here (active-active,
    :mod:`cdcgen.replication.peers`). A dry run writes nothing: it returns the
    bootstrap's dry run when one would happen, else the range the run would apply.
    """
    job, run_id, dry_run = request.job, request.run_id, request.dry_run
    started = datetime.now(UTC)
    check_not_source(ports, job)
    state = ports.states.state(job.source, job.sink)
    if not dry_run:
        state.ensure_schema()
    before = _progress(state)
    unfinished = state.copy_progress()
    copied = None
    if needs_bootstrap(request.mode, before, unfinished):
        copied = bootstrap_sink(config, ports, request)
        if dry_run:
            return copied
        before = state.progress()
    else:
        check_no_copy(unfinished, job.source, job.sink)
    plan = plan_apply(before, lake_coverage(ports.checkpoints, job.source))
    record = _record(job, run_id, started, before)
    if dry_run:
        shape_of(ports, job, dry_run=True)  # refuses as a run would
        return record.updated(
            dry_run=True,
            would_apply_from=plan.since.isoformat(),
            would_apply_until=plan.until.isoformat(),
            ended_at=datetime.now(UTC).isoformat(),
            rejected=(),
            rejected_count=0,
            status=ReplicationRunStatus.DRY_RUN,
        )
    if copied is not None:
        done = BootstrapDone(bootstrapped_at=copied.bootstrapped_at, copied_rows=copied.copied_rows)
        record = record.updated(bootstrap=done)
    if plan.empty:
        log.info("%s: nothing new in the lake beyond %s", job.sink, plan.since)
        return _finish(config, record, before, 0, 0, [])
    shape = shape_of(ports, job)
    applier = SinkApplier(
        ports.writes, shape, state, run_id, ports.settings, on_applied=ports.on_applied,
        elsewhere=ports.spark.slice_apply(job, shape, run_id),
    )  # fmt: skip
    outcome = applier.apply(ports.lake, plan, peer=job.sink)
    state.save_progress(plan.until, run_id, plan.lake_version)
    record = record.updated(
        applied_from=plan.since.isoformat(),
        lake_version=plan.lake_version,
        peer_log_rows_skipped=outcome.peer_rows,
        slices=outcome.slices,
        largest_slice_rows=outcome.largest_slice,
        applied_operations=dict(sorted(outcome.operations.items())),
    )
    return _finish(
        config, record, state.progress(), outcome.log_rows, outcome.batches, outcome.rejected,
        outcome.rejected_count,
    )  # fmt: skip


def _progress(state: SinkState) -> SinkProgress:
    """The sink's state of the table, none before the state tables exist."""
    return state.progress() if state.exists() else SinkProgress(state.source, state.sink)


def needs_bootstrap(mode: Mode, progress: SinkProgress, unfinished: CopyProgress | None) -> bool:
    """Whether a run copies first: asked to (a bootstrap ``mode``), or allowed to
    (:attr:`Mode.BOOTSTRAP_IF_NEEDED`) for a sink never bootstrapped or whose copy is
    unfinished."""
    if mode in (Mode.BOOTSTRAP, Mode.BOOTSTRAP_REPLACE):
        return True
    if mode is Mode.BOOTSTRAP_IF_NEEDED:
        return progress.consistent_until is None or unfinished is not None
    return False


def bootstrap_sink(
    config: PipelineConfig, ports: ReplicationPorts, request: ReplicationRequest
) -> ReplicationRecord:
    """Copy the source table into the sink at a time the source's clocks give, or resume
    the unfinished copy at its own; the bootstrap's record.

    The copy is a Spark job (:meth:`SparkJobs.copier`). Only
    :attr:`Mode.BOOTSTRAP_REPLACE` may truncate a sink table holding rows. A dry run
    makes every check and says what the bootstrap would do (which table it would
    truncate), writing nothing."""
    job, run_id, dry_run = request.job, request.run_id, request.dry_run
    replace = request.mode is Mode.BOOTSTRAP_REPLACE
    started = datetime.now(UTC)
    check_not_source(ports, job)
    ports.spark.check_clusters()
    state = ports.states.state(job.source, job.sink)
    if not dry_run:
        state.ensure_schema()
    shape = shape_of(ports, job, dry_run=dry_run, keep_dropped=False)  # the source's only
    before = _progress(state)
    unfinished = state.copy_progress()
    plan, abandoned = _bootstrap_plan(config, ports, job, shape, before, unfinished, replace)
    record = _record(job, run_id, started, before)
    if dry_run:
        return record.updated(
            kind="bootstrap",
            dry_run=True,
            snapshot_at=plan.snapshot_at.isoformat(),
            would_truncate=job.sink.qualified if plan.truncate else None,
            resumes_copy=plan.resumes is not None,
            sink_cluster=ports.sink.identity().name,
            ended_at=datetime.now(UTC).isoformat(),
            rejected=(),
            rejected_count=0,
            status=ReplicationRunStatus.DRY_RUN,
        )
    if abandoned is not None:
        log.warning("%s: the copy at %s cannot resume; starting over", job.sink, abandoned)
        state.end_copy(abandoned.snapshot_at)
    outcome = bootstrap(ports.spark.copier(job, shape), state, plan, run_id)
    record = record.updated(
        kind="bootstrap",
        copied_rows=outcome.rows,
        truncated=outcome.truncated,
        copied_rows_now=outcome.rows_now,
        resumed_ranges=outcome.resumed_ranges,
        copy_ranges=outcome.ranges,
    )
    return _finish(config, record, state.progress(), 0, 0, [])


def _bootstrap_plan(
    config: PipelineConfig,
    ports: ReplicationPorts,
    job: Replication,
    shape: SinkShape,
    before: SinkProgress,
    unfinished: CopyProgress | None,
    replace: bool,
) -> tuple[BootstrapPlan, CopyProgress | None]:
    """Resume the unfinished copy, or plan a new one at a snapshot time read now; with
    ``replace``, a copy that cannot resume is abandoned (returned) for a new one."""
    lake_since = lake_coverage(ports.checkpoints, job.source).since
    current = before.consistent_until
    if unfinished is not None:
        try:
            resumed = plan_resume(
                job.source, job.sink, unfinished, lake_since=lake_since, current=current
            )
            return resumed, None
        except ReplicationError:
            if not replace:
                raise
    clocks = ports.source_clocks.read_clocks()
    at = snapshot_time(clocks, config.confidence_window, config.generation_leeway)
    if unfinished is not None and at <= unfinished.snapshot_at:
        # Its state goes with a tombstone at its own time, which would hide a new copy's.
        raise SnapshotClockUnreadable(
            f"{job.sink}: a snapshot now ({iso_millis(at)}) is not after the abandoned "
            f"copy's ({iso_millis(unfinished.snapshot_at)}); the nodes' clocks must pass it"
        )
    plan = plan_bootstrap(
        job.source,
        job.sink,
        at,
        lake_since=lake_since,
        current=current,
        sink_empty=ports.sink.is_empty(job.sink, shape.table.partition_key[0]),
        replace=replace,
    )
    return plan, unfinished


def _record(
    job: Replication, run_id: str, started: datetime, progress: SinkProgress
) -> ReplicationRecord:
    return ReplicationRecord(
        kind="apply",
        source_table=job.source.qualified,
        sink_table=job.sink.qualified,
        run_id=run_id,
        started_at=started.isoformat(),
        consistent_from=_iso(progress.consistent_until),
    )


def _finish(
    config: PipelineConfig,
    record: ReplicationRecord,
    progress: SinkProgress,
    log_rows: int,
    batches: int,
    rejected: Sequence[RejectedEntry],
    rejected_count: int = 0,
) -> ReplicationRecord:
    """The record completed and kept; ``rejected``: the first changes not applied (as
    the applier names them), ``rejected_count`` how many in all (at least as many)."""
    ended = datetime.now(UTC)
    count = max(rejected_count, len(rejected))
    lag = progress.lag(ended)
    record = record.updated(
        ended_at=ended.isoformat(),
        consistent_until=_iso(progress.consistent_until),
        bootstrapped_at=_iso(progress.bootstrapped_at),
        lag_seconds=None if lag is None else round(lag, 3),
        applied_log_rows=log_rows,
        applied_batches=batches,
        rejected=tuple(rejected),
        rejected_count=count,
        status=ReplicationRunStatus.REJECTED if count else ReplicationRunStatus.OK,
    )
    record_replication(config.report_dir, record, keep_runs=config.report_keep_runs)
    return record


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


#: ``CDCGEN_SINK_<X>`` sets ``CDCGEN_<X>`` for the sink's session (hosts, port,
#: credentials, TLS); unset, the sink is the source cluster.
SINK_PREFIX = "CDCGEN_SINK_"


#: The sink's share of a configuration: how to reach it (credentials apart).
SINK_ACCESS = (
    "contact_points", "port", "protocol_version", "tls", "tls_ca_file", "tls_cert_file",
    "tls_key_file", "tls_verify_hostname", "local_datacenter",
)  # fmt: skip


def sink_variables(sink: PipelineConfig) -> dict[str, str]:
    """``CDCGEN_SINK_*`` variables that make :func:`sink_environment` describe ``sink``:
    its hosts, port, protocol and TLS, and unset ones as empty, so the source's never
    stand in for them; the user name empty too (a process that adds the sink's
    credentials sets it). No credential: these go through XCom."""
    names = sink.env_names()
    exported = sink.to_env()
    variables = {
        SINK_PREFIX + names[field].removeprefix("CDCGEN_"): exported.get(names[field], "")
        for field in SINK_ACCESS
    }
    return {**variables, f"{SINK_PREFIX}USERNAME": ""}


def sink_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment the sink's configuration is read from."""
    merged = dict(env)
    sink = {k[len(SINK_PREFIX) :]: v for k, v in env.items() if k.startswith(SINK_PREFIX)}
    if "USERNAME" in sink or "PASSWORD" in sink or "PASSWORD_FILE" in sink:
        for name in ("USERNAME", "PASSWORD", "PASSWORD_FILE"):
            merged.pop(f"CDCGEN_{name}", None)
    merged.update({f"CDCGEN_{k}": v for k, v in sink.items()})
    return merged
