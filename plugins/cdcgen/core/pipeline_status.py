"""Where each table stands, as the pipeline's state tables say: what `cdcgen changes status`
and `cdcgen replication status` print.

An operator asks between runs, often because something looks stuck, so the answer comes
from the state the runs themselves keep (the changes' checkpoints and watermark in the
state keyspace, a sink's consistency point, copy and rejects on the sink), not from the
report site, which a failed task may never have reached. The state tables hold no run
log: a run's outcome is read from what it left behind. A changes run saves bucket
checkpoints as each Spark job commits and the watermark last, so checkpoints written after
the watermark's last save are a run that stopped part-way (or one still running); a
replication run that rejected changes leaves them under its run id; a bootstrap's copy
row exists only until the copy ends.

The cells of a state row are written ``USING TIMESTAMP`` of the point they record, so a
run that leaves the point where it was ties with the run before it, and Cassandra keeps
the larger value of each cell: the later ``updated_at``, but the larger of the two run
ids. ``last_run_at`` is therefore always the last run's; ``last_run`` is the run that
last moved the point, or, when runs tied, the larger id among them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from cdcgen.core.copy_progress import CopyProgress
from cdcgen.core.replication_plan import SinkProgress
from cdcgen.core.watermark import BucketCheckpoint, TableProgress


class ChangesOutcome(StrEnum):
    #: The run saved the watermark, its last step: it went to its end.
    FINISHED = "finished"
    #: Checkpoints were saved after the watermark's last save: a run stopped part-way,
    #: or is still running.
    STOPPED_PART_WAY = "stopped part-way"
    #: A first run recorded where the table starts, and no watermark yet.
    NO_WATERMARK = "no watermark yet"


class ReplicationOutcome(StrEnum):
    #: Every change up to the consistency point is in the sink.
    APPLIED = "applied"
    #: The last run recorded changes the sink did not take (``cdc_replication_rejects``).
    REJECTED = "rejected changes"
    #: A bootstrap's copy started and has not ended: run the bootstrap again to resume it.
    COPY_UNFINISHED = "copy unfinished"


class _Status(BaseModel):
    model_config = ConfigDict(frozen=True)


class ChangesStatus(_Status):
    """One table of the changes pipeline."""

    table: str
    #: Everything of the table up to this time is in the lake (None before the first run).
    watermark: datetime | None
    #: Seconds from the watermark to when the status was read.
    lag_seconds: float | None
    #: The run that last moved the watermark, or wrote the newest checkpoints.
    last_run: str
    last_run_at: datetime | None
    outcome: ChangesOutcome
    #: A version of the table's Delta table that holds every row up to the watermark.
    lake_version: int | None = None
    #: The latest re-bootstrap: the lake has none of the changes before it.
    rebootstrapped_at: datetime | None = None


class ReplicationStatus(_Status):
    """One sink table."""

    source_table: str
    sink_table: str
    #: Every change of the source table up to this time is in the sink.
    consistent_until: datetime | None
    lag_seconds: float | None
    last_run: str
    last_run_at: datetime | None
    outcome: ReplicationOutcome
    #: Changes the last run recorded as not applied, and all the sink has recorded.
    rejected_in_last_run: int = 0
    rejected: int = 0
    #: Token ranges an unfinished copy has done.
    copied_ranges: int | None = None


def _lag(point: datetime | None, now: datetime) -> float | None:
    return None if point is None else round((now - point).total_seconds(), 3)


def changes_status(
    progress: TableProgress, newest_checkpoint: BucketCheckpoint | None, now: datetime
) -> ChangesStatus:
    """A table's status from its progress row and its most recently saved checkpoint."""
    saved = progress.watermark_updated_at
    checkpointed = newest_checkpoint.updated_at if newest_checkpoint is not None else None
    if checkpointed is not None and (saved is None or checkpointed > saved):
        assert newest_checkpoint is not None
        run, at = newest_checkpoint.run_id, checkpointed
        outcome = ChangesOutcome.STOPPED_PART_WAY
    elif progress.watermark is None:
        run, at, outcome = progress.run_id, None, ChangesOutcome.NO_WATERMARK
    else:
        run, at, outcome = progress.run_id, saved, ChangesOutcome.FINISHED
    return ChangesStatus(
        table=progress.table.qualified,
        watermark=progress.watermark,
        lag_seconds=_lag(progress.watermark, now),
        last_run=run,
        last_run_at=at,
        outcome=outcome,
        lake_version=progress.lake_version,
        rebootstrapped_at=progress.rebootstrapped_at,
    )


def replication_status(
    progress: SinkProgress,
    copy: CopyProgress | None,
    rejects_by_run: Mapping[str, int],
    now: datetime,
    *,
    copy_started_at: datetime | None = None,
) -> ReplicationStatus:
    """A sink table's status from its progress row, its unfinished copy if any (and when
    that started), and how many rejected changes the sink holds per run."""
    run, at = progress.run_id, progress.updated_at
    if copy is not None:
        run, at, outcome = copy.run_id, copy_started_at, ReplicationOutcome.COPY_UNFINISHED
    elif rejects_by_run.get(progress.run_id):
        outcome = ReplicationOutcome.REJECTED
    else:
        outcome = ReplicationOutcome.APPLIED
    return ReplicationStatus(
        source_table=progress.source.qualified,
        sink_table=progress.sink.qualified,
        consistent_until=progress.consistent_until,
        lag_seconds=_lag(progress.consistent_until, now),
        last_run=run,
        last_run_at=at,
        outcome=outcome,
        rejected_in_last_run=rejects_by_run.get(run, 0),
        rejected=sum(rejects_by_run.values()),
        copied_ranges=len(copy.done) if copy is not None else None,
    )
