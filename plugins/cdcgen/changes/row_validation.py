"""The row checks of a run, on Spark: the :class:`~.changes_run.RowChecks` the orchestrator calls.

Reads back what a job of the run wrote (:meth:`~.lake.DeltaChangesLake.dataset` at the
job's version; the orchestrator checks each job before checkpointing it), shapes
it for the row expectations and, when asked, counts the same windows on the source
(:mod:`.row_frames`), then runs the change suites
(:func:`cdcgen.validation.change_rows.validate_change_frames`), which render Data Docs
under ``<report_dir>/changes/<table>/<run>/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from cdcgen.changes.changes_lake import DeltaChangesLake
from cdcgen.changes.range_counts import range_counts_frame
from cdcgen.changes.result import ExtractionRun, JobRows
from cdcgen.changes.row_frames import (
    change_rows_frame,
    source_counts_frame,
    stream_counts_frame,
    windows_frame,
)
from cdcgen.changes.stream_reads import StreamFanout
from cdcgen.changes.verdicts import job_report_dir
from cdcgen.core.expected_streams import GenerationMapper
from cdcgen.reports.checks_page import CHECKS_DIR
from cdcgen.reports.records import slug
from cdcgen.validation.change_rows import validate_change_frames
from cdcgen.validation.results import ValidationResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class SparkRowChecks:
    """Checks a run's windows in ``lake``; ``source_counts`` None skips the count suite."""

    def __init__(
        self,
        spark: SparkSession,
        lake: DeltaChangesLake,
        partition_key: tuple[str, ...],
        *,
        leeway_us: int,
        report_dir: Path,
        source_counts: StreamFanout | None = None,
        expectations_dir: Path | None = None,
    ) -> None:
        self._spark = spark
        self._lake = lake
        self._partition_key = partition_key
        self._leeway_us = leeway_us
        self._report_dir = Path(report_dir)
        self._source_counts = source_counts
        self._expectations_dir = expectations_dir

    def report_dir(self, run: ExtractionRun) -> Path:
        """Where the run's Data Docs and checks page go."""
        return self._report_dir / CHECKS_DIR / run.table.qualified / slug(run.run_id)

    def check(self, run: ExtractionRun, job: JobRows | None = None) -> ValidationResult:
        """``job``'s windows at its version (Data Docs in the run's folder, or in
        ``job-N/`` under it for a run of several jobs); without, every window of the
        run at its last version."""
        target = self.report_dir(run)
        if job is not None and job.jobs > 1:
            target = job_report_dir(target, job.number)
        windows = list(run.windows if job is None else job.windows)
        version = run.lake_version if job is None else job.version
        if not windows or not self._lake.windows():
            return ValidationResult(
                True, [], target / "index.html", "no window extracted: nothing to check"
            )
        spark = self._spark
        rows = change_rows_frame(
            self._lake.dataset(version),  # exactly what this run committed
            windows_frame(spark, windows, self._leeway_us),
            GenerationMapper(run.generations),
            self._partition_key,
        )
        counts = source = None
        if self._source_counts is not None:
            index = self._lake.range_index(windows)
            ranges = self._lake.ranges
            if index is not None and ranges is not None:  # as many streams as the run had
                readers = self._source_counts.readers
                source = range_counts_frame(spark, readers, ranges, index)
            else:
                source = source_counts_frame(spark, self._source_counts, windows)
            counts = stream_counts_frame(rows, source)
        try:
            return validate_change_frames(
                rows,
                counts,
                report_dir=target,
                run_name=f"{run.table.qualified} {run.run_id}",
                expectations_dir=self._expectations_dir,
            )
        finally:
            # The source's counts are cached for the checks only: a follow checks every
            # few seconds for hours in one session, which would otherwise keep them all.
            if source is not None:
                source.unpersist()
