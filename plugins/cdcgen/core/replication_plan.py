"""Which changes a replication run applies to a sink, and when it must refuse (pure).

The YugabyteDB xCluster design's state, on this pipeline's lake:

* A sink table is **consistent until** ``C``: every change of every stream with a write
  time before ``C`` has been applied (its "consistency timestamp"). A bootstrap sets
  ``C`` to the snapshot's time; each completed run moves it to the lake's watermark
  ``W`` (everything before ``W`` is in the lake, :mod:`cdcgen.core.watermark`).
* A run applies the changes with write time in ``[C, W)``. Per-stream checkpoints
  (``applied_until``, written only after the stream's changes are applied) let a run
  killed half-way skip, on its next attempt, the streams it finished; re-applying the
  others is harmless, since every write carries its original timestamp.
* The lake must hold every change from ``C`` on: it holds a table's changes from its
  first extraction (or from the point a changes re-bootstrap moved it to, after the log
  expired changes before they were read) up to ``W``. A sink consistent until a time
  before that would silently miss changes, so the run refuses, naming the command that
  re-bootstraps the sink; the same for a sink that was never bootstrapped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.time import iso_millis


class ReplicationError(Exception):
    """Terminal: the sink cannot be brought forward as it stands; the message says why
    and what to run."""


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
    """Apply the changes with write time in ``[since, until)``, except those of a stream
    already applied up to its ``applied_until`` by an interrupted run."""

    since: datetime
    until: datetime
    lake_version: int | None
    applied_until: Mapping[bytes, datetime] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return self.until <= self.since

    def stream_since(self, stream: bytes) -> datetime:
        """Where ``stream``'s changes start for this run."""
        return max(self.since, self.applied_until.get(stream, self.since))


def bootstrap_command(source: TableRef, sink: TableRef, replace: bool = False) -> str:
    """The command that (re-)bootstraps ``sink`` from a snapshot of ``source``."""
    return (
        f"cdcgen replication bootstrap --table {source.qualified} "
        f"--sink-table {sink.qualified}" + (" --replace" if replace else "")
    )


def plan_apply(
    progress: SinkProgress, lake: LakeCoverage, applied_until: Mapping[bytes, datetime]
) -> ApplyPlan:
    """The run's range, or :class:`ReplicationError` when continuing would lose changes."""
    source, sink = progress.source, progress.sink
    start = progress.consistent_until
    if start is None:
        raise ReplicationError(
            f"{sink}: never bootstrapped from {source}; a sink over a table that already "
            f"holds data starts from a snapshot: run `{bootstrap_command(source, sink)}`"
        )
    if lake.since is None or lake.until is None:
        raise ReplicationError(
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
    until = max(start, lake.until)
    later = {s: t for s, t in applied_until.items() if start < t}
    return ApplyPlan(start, until, lake.version, later)
