"""One changes run of one table as it goes, and the outcome it builds.

The orchestrator (:mod:`.changes_run`) fills an :class:`ExtractionRun` job by job: the row
checks read the plan from it (which windows to check, over which generations, at which
lake version), in domain types the run's outcome does not carry. What the run did
becomes its outcome once, by :meth:`ExtractionRun.outcome`
(:class:`~cdcgen.core.changes_result.ChangesRunResult`), the one model its result file,
its summary, its metrics and its report record are made from.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.changes_result import ChangesRunResult, PendingEntry, WindowEntry
from cdcgen.core.windows import GenerationSpan, Interval, Mode, Window, WindowPlan
from cdcgen.validation.results import ValidationResult


@dataclass(frozen=True)
class JobRows:
    """One job's rows as the row checks see them: its windows, in the version that
    holds them, job ``number`` of ``jobs`` in the run."""

    number: int
    jobs: int
    windows: tuple[Window, ...]
    version: int


@dataclass
class ExtractionRun:
    """A run so far: its plan, and the counts it adds up job by job (typed, as the
    orchestrator and the row checks use them); ``outcome()`` is what it did."""

    table: TableRef
    interval: Interval
    mode: Mode
    run_id: str
    plan: WindowPlan
    lake_root: str  # the lake table's location (a folder or an s3:// prefix)
    jobs: int = 0
    rows_written: int = 0
    streams_read: int = 0
    rows_per_generation: Counter[str] = field(default_factory=Counter)
    garbage_removed: int = 0
    #: The lake table versions this run committed, in order (time travel reads them).
    lake_versions: list[int] = field(default_factory=list)
    watermark: datetime | None = None
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    #: The spans the run planned over (the row checks map rows to streams with them).
    generations: tuple[GenerationSpan, ...] = ()
    #: The row checks' verdict on each job written, in order (empty: not checked).
    checks: list[ValidationResult] = field(default_factory=list)
    #: Versions whose rows failed the checks and were reverted (readable by time travel).
    quarantined_versions: list[int] = field(default_factory=list)

    @property
    def windows(self) -> tuple[Window, ...]:
        return self.plan.windows

    def add_job(self, streams: int, counters: Counter[str]) -> None:
        """Count one written job: its streams and its ``rows:<generation>`` counters."""
        for key, count in counters.items():
            if key.startswith("rows:"):
                self.rows_per_generation[key.removeprefix("rows:")] += count
                self.rows_written += count
        self.jobs += 1
        self.streams_read += streams

    def add_commit(self, version: int) -> None:
        """Record one commit of the lake by this run."""
        self.lake_versions.append(version)

    @property
    def lake_version(self) -> int | None:
        """The table version after this run's last commit (None: it committed nothing)."""
        return self.lake_versions[-1] if self.lake_versions else None

    def generation_ids(self) -> dict[str, str]:
        """The id of each written window's generation, by label (the outcome names
        generations by label only; the report shows both)."""
        return {w.generation.label: w.generation.id for w in self.windows}

    def outcome(self) -> ChangesRunResult:
        """What the run did, before its checks' verdict (:meth:`ChangesRunResult.checked`)."""
        return ChangesRunResult(
            table=self.table.qualified,
            interval=(self.interval.start.isoformat(), self.interval.end.isoformat()),
            mode=self.mode,
            run_id=self.run_id,
            lake_root=str(self.lake_root),
            windows=tuple(
                WindowEntry(
                    generation=w.generation.label,
                    bucket=w.bucket,
                    start=w.start.isoformat(),
                    end=w.end.isoformat(),
                    streams=len(w.streams),
                    kind=w.kind.value,
                )
                for w in self.windows
            ),
            pending=tuple(
                PendingEntry(
                    generation=p.generation,
                    end=p.end.isoformat(),
                    closes_at=p.closes_at.isoformat(),
                    reason=p.reason,
                )
                for p in self.plan.pending
            ),
            jobs=self.jobs,
            rows_written=self.rows_written,
            streams_read=self.streams_read,
            rows_per_generation=dict(self.rows_per_generation),
            garbage_removed=self.garbage_removed,
            lake_format="delta",
            lake_versions=tuple(self.lake_versions),
            quarantined_versions=tuple(self.quarantined_versions),
            watermark=None if self.watermark is None else self.watermark.isoformat(),
            seconds=round(self.seconds, 3),
            phases={k: round(v, 3) for k, v in self.phases.items()},
        )


class Phases:
    """Seconds spent per phase of a run (reported, so slow phases are visible)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.monotonic()

    def mark(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._last
        self._last = now
