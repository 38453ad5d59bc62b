"""One changes run of one table: plan, extract, checkpoint, watermark, check, record.

Every decision of a run is made here, over the ports only (:mod:`cdcgen.ports`), the
way scylla-cdc-java's master plans over its CQL interfaces: the adapters are built in
one place (:mod:`.job`), and tests hand in-memory fakes of the same ports. A run, for
one table and one interval:

1. read the table's state, its generations (spans) from the table's floor on, and
   every node's clock;
2. plan (:func:`cdcgen.core.windows.plan_windows`): closed windows only, the others
   reported as pending; on an incremental run, record where the table's extraction
   starts the first time;
3. write the windows job by job (groups of buckets), each job one commit of the lake,
   the first one also dropping the windows a killed run left unacknowledged (the plan's
   garbage); check the job's rows (:class:`RowChecks`), then checkpoint its buckets:
   a kill before the commit leaves nothing visible, a kill after it leaves windows the
   next run treats as unacknowledged and replaces, so a resume neither loses nor
   duplicates a change, and no checkpoint is ever ahead of the lake. Rows that fail the
   checks are quarantined: the job's commit is reverted (its version stays readable by
   time travel, for whoever investigates) and nothing of it is checkpointed, so neither
   its buckets' checkpoints nor the watermark pass bad rows and the next run reads
   those windows again instead of starting after them; the other jobs go on, and the
   run fails at its end, naming every offending row;
4. recompute and store the consistency watermark, and prune the checkpoint rows it
   implies;
5. record the run, and the checks' verdicts, on the report site.

A backfill re-extracts acknowledged windows exactly and never moves checkpoints or
the watermark. Errors keep their classes: :class:`~cdcgen.core.errors.DataExpired` and
:class:`~cdcgen.validation.errors.ChangesInvalid` are terminal, a transient read error is worth a
retry (:mod:`cdcgen.adapters.read_retries`).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from cdcgen.changes.report import record_changes_run
from cdcgen.changes.result import ExtractionRun, JobRows, Phases
from cdcgen.changes.settings import ChangesSettings
from cdcgen.changes.verdicts import combined, row_checks
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.changes_result import ChangesRunResult
from cdcgen.core.errors import DataExpired
from cdcgen.core.log_ttls import recorded_after_run, unextracted_ttl
from cdcgen.core.watermark import BucketCheckpoint, consistency_watermark
from cdcgen.core.windows import Interval, Mode, Window, WindowPolicy, plan_windows
from cdcgen.ports import ChangesLake, CheckpointStore, ClockReader, GenerationSource, LakeCommit
from cdcgen.progress import Progress
from cdcgen.validation.errors import ChangesInvalid
from cdcgen.validation.results import ValidationResult

log = logging.getLogger(__name__)


class RowChecks(Protocol):
    """Validates the rows a run wrote (the Great Expectations row suites, on Spark):
    one job's (``job``), or every window of the run at its last version."""

    def check(self, run: ExtractionRun, job: JobRows | None = None) -> ValidationResult: ...


@dataclass(frozen=True)
class ChangesPorts:
    """Everything a run talks to; ``row_checks`` None skips the checks."""

    generations: GenerationSource
    clocks: ClockReader
    checkpoints: CheckpointStore
    lake: ChangesLake
    row_checks: RowChecks | None = None


@dataclass(frozen=True)
class ChangesRequest:
    """What to extract: a table, an interval, how, and under which run."""

    table: TableRef
    interval: Interval
    mode: Mode = Mode.INCREMENTAL
    run_id: str = ""  # empty: a manual run, named here
    dag_id: str = ""

    def __post_init__(self) -> None:
        if not self.run_id:
            object.__setattr__(self, "run_id", f"manual-{uuid.uuid4().hex[:12]}")


def job_groups(windows: Sequence[Window], buckets_per_job: int) -> list[list[Window]]:
    """Windows grouped into Spark jobs by bucket (0: a single job). Smaller jobs mean a
    kill loses less work: each job is checkpointed as soon as it is written."""
    if not windows:
        return []
    if buckets_per_job == 0:
        return [list(windows)]
    buckets = sorted({w.bucket for w in windows})
    groups = [
        set(buckets[i : i + buckets_per_job]) for i in range(0, len(buckets), buckets_per_job)
    ]
    return [[w for w in windows if w.bucket in group] for group in groups]


def extract_changes(
    request: ChangesRequest,
    ports: ChangesPorts,
    config: PipelineConfig,
    settings: ChangesSettings,
    *,
    cdc_ttl: timedelta | None,
    now: datetime | None = None,
) -> ExtractionRun:
    """Steps 1 to 5 of a run (see the module doc). Windows that are not closed yet are
    returned in ``run.plan.pending``; raises ``DataExpired`` when a window is past
    the TTL of its rows: ``cdc_ttl`` (the table's CDC TTL now, None when rows never
    expire), or a shorter one the runs recorded, which rows logged before a raise of it
    keep (:mod:`cdcgen.core.log_ttls`)."""
    started = time.monotonic()
    phases = Phases()
    table, interval, mode = request.table, request.interval, request.mode
    store, lake = ports.checkpoints, ports.lake
    state = store.table_state(table)
    floor = state.floor
    since = interval.start if floor is None or mode is Mode.BACKFILL else min(floor, interval.start)
    generations = tuple(ports.generations.spans(table, since=since, until=interval.end))
    clocks = ports.clocks.read_clocks()
    now = now or datetime.now(UTC)
    phases.mark("state")
    ttl = unextracted_ttl(cdc_ttl, state.log_ttls, state.watermark)
    if ttl != cdc_ttl:
        log.warning(
            "the CDC TTL of %s is %s now, but rows after its watermark may have been "
            "logged with %s, which bounds what the log still holds of them",
            table, cdc_ttl or "none", ttl,
        )  # fmt: skip
    policy = WindowPolicy(
        leeway=config.generation_leeway,
        confidence_window=config.confidence_window,
        ttl=ttl,
        expiry_margin=settings.expiry_margin,
        buckets=lake.buckets(settings.buckets),
    )
    existing = lake.windows()
    plan = plan_windows(table, generations, interval, state, clocks, policy, now, existing, mode)
    run = ExtractionRun(
        table, interval, mode, request.run_id, plan, lake.location,
        phases=phases.seconds, generations=generations,
    )  # fmt: skip
    phases.mark("plan")
    if plan.first_run and mode is Mode.INCREMENTAL:
        store.record_start(table, plan.floor, request.run_id)
    _write_jobs(ports, settings, run)
    phases.mark("jobs")
    if mode is Mode.INCREMENTAL:
        checkpointed = store.table_state(table)  # this run's saves included
        watermark = consistency_watermark(generations, checkpointed, policy.buckets)
        if watermark is not None:  # what the checkpoints certify is in the current version
            ttls = recorded_after_run(cdc_ttl, state.log_ttls, now, watermark)
            store.save_watermark(table, watermark, request.run_id, lake.version(), ttls)
            store.prune(table, generations)
    run.watermark = store.progress(table).watermark
    phases.mark("watermark")
    run.seconds = time.monotonic() - started
    log.info("changes of %s: %s", table, run.outcome().to_json())
    return run


def _write_jobs(ports: ChangesPorts, settings: ChangesSettings, run: ExtractionRun) -> None:
    """Write the plan's windows job by job, one commit each (the first also drops the
    plan's garbage); check each job's rows, then checkpoint it, or quarantine it when
    its rows fail the checks."""
    table = run.table
    garbage = run.plan.garbage
    if not run.windows:
        if garbage:
            run.add_commit(ports.lake.remove(garbage).version)
            run.garbage_removed = len(garbage)
        return
    progress = Progress(
        total=run.plan.stream_reads,
        unit="streams",
        log=log.info,
        every=0.0,  # one line per Spark job: jobs take seconds to minutes each
        label=f"{table} {run.mode.value}",
    )
    groups = job_groups(run.windows, settings.buckets_per_job)
    for number, windows in enumerate(groups, 1):
        streams = sum(len(w.streams) for w in windows)
        commit = ports.lake.write(windows, replacing=garbage if number == 1 else ())
        counters = commit.counters
        run.add_job(streams, counters)
        run.add_commit(commit.version)
        if number == 1:
            run.garbage_removed = len(garbage)
        log.info("%s job %d done: %s", table, number, dict(counters))
        rows = sum(c for k, c in counters.items() if k.startswith("rows:"))
        progress.advance(streams, rows=rows)
        if ports.row_checks is not None:
            job = JobRows(number, len(groups), tuple(windows), commit.version)
            verdict = ports.row_checks.check(run, job)
            run.checks.append(verdict)
            if not verdict.passed:
                _quarantine(ports.lake, commit, run)
                continue
        if run.mode is Mode.INCREMENTAL:
            ports.checkpoints.save(
                table,
                (
                    BucketCheckpoint(
                        w.generation.start,
                        w.bucket,
                        w.end,
                        w.start,
                        run.run_id,
                        lake_version=commit.version,
                    )
                    for w in windows
                ),
            )


def _quarantine(lake: ChangesLake, commit: LakeCommit, run: ExtractionRun) -> None:
    """Take a job's rows that failed the checks out of the table's current version."""
    reverted = lake.revert(commit)
    run.add_commit(reverted.version)
    run.quarantined_versions.append(commit.version)
    log.error(
        "%s: rows of lake version %d failed the row checks; quarantined (version %d "
        "reverts them, time travel still reads them); nothing of them is checkpointed",
        run.table,
        commit.version,
        reverted.version,
    )


def run_changes(
    request: ChangesRequest,
    ports: ChangesPorts,
    config: PipelineConfig,
    settings: ChangesSettings,
    *,
    cdc_ttl: timedelta | None,
    now: datetime | None = None,
) -> ChangesRunResult:
    """A whole run: extract (checking each job's rows), record it on the report site.

    Returns the run's outcome with its ``checks`` (passed, summary, Data Docs), the
    report page and the ``status``. Raises :class:`ChangesInvalid` (carrying that outcome
    as ``output``) after recording a failed check.
    """
    try:
        run = extract_changes(request, ports, config, settings, cdc_ttl=cdc_ttl, now=now)
    except DataExpired as exc:
        log.error("%s", exc)
        raise
    label = f"{run.table.qualified} {run.run_id}"
    verdict = combined(run.checks, label) if run.checks else None
    outcome = run.outcome().checked(None if verdict is None else row_checks(verdict))
    page = record_changes_run(
        config.report_dir,
        outcome,
        verdict,
        generation_ids=run.generation_ids(),
        dag_id=request.dag_id,
        keep_runs=config.report_keep_runs,
    )
    outcome = outcome.updated(report=str(page))
    if verdict is not None and not verdict.passed:
        failure = ChangesInvalid(verdict)
        failure.output = outcome  # what was written and why it failed, for the caller
        raise failure
    return outcome
