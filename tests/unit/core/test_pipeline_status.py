"""What the status commands say of a table (cdcgen.core.pipeline_status): the outcome of its
last run, read from the state that run left."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.copy_progress import CopiedRange, CopyProgress
from cdcgen.core.pipeline_status import (
    ChangesOutcome,
    ReplicationOutcome,
    changes_status,
    replication_status,
)
from cdcgen.core.replication_plan import SinkProgress
from cdcgen.core.token_ranges import TokenRange
from cdcgen.core.watermark import BucketCheckpoint, TableProgress

T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
NOW = T0 + timedelta(minutes=5)
TABLE = TableRef("shop", "orders")


def progress(watermark: datetime | None, saved: datetime | None) -> TableProgress:
    return TableProgress(TABLE, T0 - timedelta(hours=1), watermark, saved, "run-1", 7)


def checkpoint(saved: datetime, run: str = "run-2") -> BucketCheckpoint:
    return BucketCheckpoint(T0, 0, T0 + timedelta(minutes=1), run_id=run, updated_at=saved)


def test_a_run_that_saved_the_watermark_finished_and_the_lag_runs_from_the_watermark() -> None:
    saved = T0 + timedelta(seconds=40)
    status = changes_status(progress(T0, saved), checkpoint(saved - timedelta(seconds=1)), NOW)
    assert status.outcome is ChangesOutcome.FINISHED
    assert (status.last_run, status.last_run_at) == ("run-1", saved)
    assert status.lag_seconds == 300.0 and status.watermark == T0
    assert status.table == "shop.orders" and status.lake_version == 7


def test_checkpoints_newer_than_the_watermark_are_a_run_that_stopped_part_way() -> None:
    later = T0 + timedelta(minutes=2)
    status = changes_status(progress(T0, T0 + timedelta(seconds=40)), checkpoint(later), NOW)
    assert status.outcome is ChangesOutcome.STOPPED_PART_WAY
    assert (status.last_run, status.last_run_at) == ("run-2", later)
    assert status.watermark == T0  # the watermark stays where the last finished run left it


def test_a_start_without_a_watermark_says_so() -> None:
    status = changes_status(progress(None, None), None, NOW)
    assert status.outcome is ChangesOutcome.NO_WATERMARK
    assert status.lag_seconds is None and status.last_run_at is None
    first_jobs = changes_status(progress(None, None), checkpoint(T0), NOW)
    assert first_jobs.outcome is ChangesOutcome.STOPPED_PART_WAY


SINK = TableRef("sink", "orders")


def sink_progress(run: str = "apply-2") -> SinkProgress:
    return SinkProgress(TABLE, SINK, T0, T0 - timedelta(days=1), 3, run, T0 + timedelta(seconds=9))


def test_a_sink_whose_last_run_rejected_nothing_is_applied_and_counts_older_rejects() -> None:
    status = replication_status(sink_progress(), None, {"apply-1": 2}, NOW)
    assert status.outcome is ReplicationOutcome.APPLIED
    assert (status.rejected_in_last_run, status.rejected) == (0, 2)
    assert status.lag_seconds == 300.0 and status.sink_table == "sink.orders"


def test_rejects_of_the_last_run_and_an_unfinished_copy_are_the_outcome() -> None:
    rejected = replication_status(sink_progress(), None, {"apply-2": 3, "apply-1": 1}, NOW)
    assert rejected.outcome is ReplicationOutcome.REJECTED
    assert (rejected.rejected_in_last_run, rejected.rejected) == (3, 4)
    done = (CopiedRange(TokenRange(-10, 0), 5, "boot"),)
    copy = CopyProgress(T0, False, "boot", done)
    copying = replication_status(sink_progress(), copy, {}, NOW, copy_started_at=T0)
    assert copying.outcome is ReplicationOutcome.COPY_UNFINISHED
    assert (copying.last_run, copying.last_run_at, copying.copied_ranges) == ("boot", T0, 1)
