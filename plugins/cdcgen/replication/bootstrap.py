"""Bootstrapping a sink from a snapshot of the source table, then applying from its time.

The xCluster design's first branch: a sink over a source that already holds data
starts from a copy taken at a recorded time ``S``, and the changes apply from ``S`` on.

* ``S`` is fixed before the copy reads anything, from the source nodes' clocks
  (:func:`cdcgen.core.replication_plan.snapshot_time`): every write stamped before
  ``S`` has then reached the source, so the copy holds it. Writes stamped after ``S``
  may or may not be in the copy; the changes from ``S`` on are applied after it anyway,
  and replaying them is harmless.
* Each copied cell keeps its write time and remaining TTL
  (:mod:`cdcgen.core.snapshot_copy`), so the sink resolves later changes, replayed at
  their own times, as the source did.
* The copy is a Spark job over token ranges of the source (:mod:`.spark_copy`), at the
  metadata consistency level, each row one single-partition batch, many at a time.
* It is resumable by range: the copy's ``S`` and whether it replaces the sink's rows are
  recorded on the sink before anything is truncated or copied, then each range once the
  sink acknowledged its rows. A bootstrap that finds an unfinished copy of the same
  table resumes it, at the same ``S``, with the ranges not recorded, truncating nothing
  already copied (:mod:`cdcgen.core.copy_progress`); the usual checks hold with that
  ``S``. If the lake no longer covers it, only ``replace`` starts over.
* The consistency point ``S`` is written on the sink only after every range is
  recorded; the copy's rows are removed after it. Until then the sink table is
  unfinished, and a run that would apply changes to it refuses (:func:`check_no_copy`).
* A sink table that already holds rows is replaced only when asked (``replace``): it is
  truncated first, since rows the source deleted meanwhile would otherwise stay.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.copy_progress import CopyProgress
from cdcgen.core.errors import CopyIncomplete, ReplicationError
from cdcgen.core.replication_plan import bootstrap_command
from cdcgen.core.time import iso_millis
from cdcgen.core.token_ranges import TokenRange
from cdcgen.ports import SinkState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BootstrapOutcome:
    """What a bootstrap did: its snapshot time, the copy's rows (all attempts'), whether
    it replaced the sink's rows, how many of its ranges an earlier attempt had done, how
    many it recorded in all, and the rows this attempt copied."""

    snapshot_at: datetime
    rows: int
    truncated: bool
    resumed_ranges: int = 0
    ranges: int = 0
    rows_now: int = 0


def check_lake_covers(
    source: TableRef, sink: TableRef, since: datetime | None, at: datetime
) -> None:
    """The lake must hold the source's changes from ``at`` on, or the apply after the
    copy could not start."""
    if since is None or since > at:
        held = "none yet" if since is None else f"only from {iso_millis(since)}"
        raise ReplicationError(
            f"{source}: the lake holds its changes {held}, so changes after a snapshot at "
            f"{iso_millis(at)} could not be applied to {sink}; run the cdc_changes DAG for "
            f"{source} first, then `{bootstrap_command(source, sink)}`"
        )


class TableCopy(Protocol):
    """What copies the source table into the sink (:mod:`.spark_copy` as a Spark job):
    the ring's token ranges, each copied range recorded on the sink as it finishes."""

    def truncate_sink(self) -> None: ...

    def ring(self) -> list[TokenRange]:
        """The source ring in the copy's ranges, in ring order."""
        ...

    def copy(self, ranges: Sequence[TokenRange], snapshot_at: datetime, run_id: str) -> int:
        """Copy ``ranges`` at ``snapshot_at``, recording each on the sink once its rows
        are acknowledged; rows copied."""
        ...


@dataclass(frozen=True)
class BootstrapPlan:
    """What a bootstrap will do: copy at ``snapshot_at``, truncating the sink table
    first when it holds rows (only when asked)."""

    source: TableRef
    sink: TableRef
    snapshot_at: datetime
    truncate: bool
    #: The unfinished copy this bootstrap resumes (None: a new copy).
    resumes: CopyProgress | None = None


def plan_bootstrap(
    source: TableRef,
    sink: TableRef,
    snapshot_at: datetime,
    *,
    lake_since: datetime | None,
    current: datetime | None,
    sink_empty: bool,
    replace: bool,
) -> BootstrapPlan:
    """Every check a bootstrap makes before it writes anything (a dry run stops here):
    the lake covers the changes after the snapshot, the sink is not already consistent
    past it (``current``: its consistency point, None for a new sink), and a sink table
    holding rows is replaced only when asked."""
    check_lake_covers(source, sink, lake_since, snapshot_at)
    if current is not None and current > snapshot_at:
        raise ReplicationError(
            f"{sink} is consistent with {source} until {iso_millis(current)}, "
            f"later than a snapshot now ({iso_millis(snapshot_at)}): nothing to re-bootstrap"
        )
    if not sink_empty and not replace:
        raise ReplicationError(
            f"{sink} already holds rows; a bootstrap replaces them only when asked "
            "(--replace): rows deleted on the source would otherwise stay"
        )
    return BootstrapPlan(source, sink, snapshot_at, truncate=not sink_empty)


def plan_resume(
    source: TableRef,
    sink: TableRef,
    copy: CopyProgress,
    *,
    lake_since: datetime | None,
    current: datetime | None,
) -> BootstrapPlan:
    """Resume ``copy``: at its own snapshot time, which the lake must still cover and the
    sink must not be consistent past; its rows are the copy's own, so the sink holding
    rows is no reason to refuse, and it truncates only while no range is recorded."""
    at = copy.snapshot_at
    try:
        check_lake_covers(source, sink, lake_since, at)
    except ReplicationError as exc:
        raise ReplicationError(
            f"{sink}: an unfinished copy at {iso_millis(at)} cannot be resumed: {exc}; or "
            f"start over: `{bootstrap_command(source, sink, replace=True)}`"
        ) from None
    if current is not None and current > at:
        raise ReplicationError(
            f"{sink} is consistent with {source} until {iso_millis(current)}, later than the "
            f"unfinished copy at {iso_millis(at)}: start over with "
            f"`{bootstrap_command(source, sink, replace=True)}`"
        )
    return BootstrapPlan(source, sink, at, truncate=copy.truncates_now, resumes=copy)


def check_no_copy(copy: CopyProgress | None, source: TableRef, sink: TableRef) -> None:
    """Refuse to apply changes to a sink table whose copy is unfinished: it may be
    truncated and half copied, whatever its consistency point still says."""
    if copy is not None:
        raise ReplicationError(
            f"{sink}: a bootstrap's copy at {iso_millis(copy.snapshot_at)} is unfinished "
            f"({len(copy.done)} token range(s) done); resume it: "
            f"`{bootstrap_command(source, sink)}`"
        )


def bootstrap(copy: TableCopy, state: SinkState, plan: BootstrapPlan, run_id: str
              ) -> BootstrapOutcome:  # fmt: skip
    """Record the copy (a new one), truncate if planned, copy the ranges not recorded,
    then, once every range is, record ``S`` as the sink's consistency point and remove
    the copy's rows."""
    at = plan.snapshot_at
    if plan.resumes is None:
        state.start_copy(at, plan.truncate, run_id)
        progress = CopyProgress(at, plan.truncate, run_id)
    else:
        progress = plan.resumes
    if plan.truncate:
        copy.truncate_sink()
    ring = copy.ring()
    remaining = progress.remaining(ring)
    log.info(
        "%s: copying %d of %d token ranges of %s at %s%s",
        plan.sink, len(remaining), len(ring), plan.source, iso_millis(at),
        f" (resuming {progress.run_id or 'a copy'})" if plan.resumes else "",
    )  # fmt: skip
    rows_now = copy.copy(remaining, at, run_id)
    finished = state.copy_progress()
    left = progress.remaining(ring) if finished is None else finished.remaining(ring)
    if finished is None or left:
        raise CopyIncomplete(
            f"{plan.sink}: the copy's state does not cover {len(left)} token range(s) after "
            "the copy; the bootstrap run again copies them"
        )
    state.save_progress(at, run_id, bootstrapped_at=at)
    state.end_copy(at)
    log.info("%s: bootstrapped from %s at %s, %d rows", plan.sink, plan.source, at, finished.rows)
    return BootstrapOutcome(
        at, finished.rows, progress.truncate, len(progress.done), len(finished.done), rows_now
    )
