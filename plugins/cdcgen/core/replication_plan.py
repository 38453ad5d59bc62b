"""Which changes a replication run applies to a sink, and when it must refuse (pure).

The YugabyteDB xCluster design's state, on this pipeline's lake:

* A sink table is **consistent until** ``C``: every change of every stream with a write
  time before ``C`` has been applied (its "consistency timestamp"). A bootstrap sets
  ``C`` to the snapshot's time; each completed run moves it to the lake's watermark
  ``W`` (everything before ``W`` is in the lake, :mod:`cdcgen.core.watermark`).
* A run applies the changes with write time in ``[C, W)``, in consecutive time slices
  (:mod:`cdcgen.replication.change_slices`): once a slice is applied, every change before
  its end is, so ``C`` moves there. A run killed half-way resumes from the last slice it
  finished; re-applying part of one is harmless, since every write carries its original
  timestamp.
* ``S``, a bootstrap's snapshot time, comes from the source nodes' clocks, never the
  worker's: the earliest node clock minus the confidence window and the generation
  leeway, the changes pipeline's own rule for a closed window. Writes are stamped near
  the clocks of the nodes (a coordinator's, or a client's within the leeway ScyllaDB
  accepts), and the confidence window covers those still in flight, so a write stamped
  before ``S`` has reached the source and the copy holds it; a worker clock ahead of the
  nodes would put ``S`` past writes still to come, which neither the copy nor the apply
  would carry.
* The lake must hold every change from ``C`` on: it holds a table's changes from its
  first extraction (or from the point a changes re-bootstrap moved it to, after the log
  expired changes before they were read) up to ``W``. A sink consistent until a time
  before that would silently miss changes, so the run refuses, naming the command that
  re-bootstraps the sink; the same for a sink that was never bootstrapped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.clocks import NodeClock
from cdcgen.core.errors import (
    LakeNotStarted,
    ReplicationError,
    SnapshotClockUnreadable,
)
from cdcgen.core.time import iso_millis


@dataclass(frozen=True)
class SinkProgress:
    """What the sink's state says of one replicated table."""

    source: TableRef
    sink: TableRef
    consistent_until: datetime | None = None
    bootstrapped_at: datetime | None = None
    lake_version: int | None = None
    run_id: str = ""
    updated_at: datetime | None = None

    def lag(self, now: datetime) -> float | None:
        """Seconds between ``now`` and the consistency timestamp."""
        if self.consistent_until is None:
            return None
        return (now - self.consistent_until).total_seconds()


@dataclass(frozen=True)
class LakeCoverage:
    """Which changes of the source table the lake holds: all of ``[since, until)``."""

    since: datetime | None
    until: datetime | None
    version: int | None = None


@dataclass(frozen=True)
class ApplyPlan:
    """Apply the changes with write time in ``[since, until)`` of the lake's version."""

    since: datetime
    until: datetime
    lake_version: int | None

    @property
    def empty(self) -> bool:
        return self.until <= self.since


def bootstrap_command(source: TableRef, sink: TableRef, replace: bool = False) -> str:
    """The command that (re-)bootstraps ``sink`` from a snapshot of ``source``."""
    return (
        f"cdcgen replication bootstrap --table {source.qualified} "
        f"--sink-table {sink.qualified}" + (" --replace" if replace else "")
    )


def snapshot_time(
    clocks: Sequence[NodeClock], confidence: timedelta, leeway: timedelta
) -> datetime:
    """A bootstrap's ``S``: the earliest source node clock, less the confidence window
    and the leeway; every node's clock must be readable."""
    unread = [c for c in clocks if c.reading is None]
    if unread or not clocks:
        why = "; ".join(f"{c.node}: {c.error or 'no clock'}" for c in unread) or "no node"
        raise SnapshotClockUnreadable(f"no snapshot time without every node's clock: {why}")
    earliest = min(c.reading for c in clocks if c.reading is not None)
    return earliest - confidence - leeway


def plan_apply(progress: SinkProgress, lake: LakeCoverage) -> ApplyPlan:
    """The run's range, or :class:`ReplicationError` when continuing would lose changes."""
    source, sink = progress.source, progress.sink
    start = progress.consistent_until
    if start is None:
        raise ReplicationError(
            f"{sink}: never bootstrapped from {source}; a sink over a table that already "
            f"holds data starts from a snapshot: run `{bootstrap_command(source, sink)}`"
        )
    if lake.since is None or lake.until is None:
        raise LakeNotStarted(
            f"{source}: no change of it is in the lake yet; run the cdc_changes DAG for it "
            f"before replicating it to {sink}"
        )
    if start < lake.since:
        raise ReplicationError(
            f"{sink} is consistent with {source} until {iso_millis(start)}, but the lake holds "
            f"{source}'s changes only from {iso_millis(lake.since)} (those before were never "
            "extracted: the CDC log's TTL expired them, or the lake started later); "
            "continuing would silently skip them. Re-bootstrap the sink: "
            f"`{bootstrap_command(source, sink, replace=True)}`"
        )
    return ApplyPlan(start, max(start, lake.until), lake.version)
