"""A changes run as a record of the report site (:mod:`cdcgen.reports`).

The record carries what the changes page shows: the interval, per table the consistency
watermark and the lag behind it, rows per generation, and every row expectation with
its offending rows spelled out (a misrouted row appears with its stream, ``cdc$time``,
``batch_seq_no`` and base key). The DAG calls :func:`record_changes_run` at the end of
a run, whether the checks passed or not.
"""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from cdcgen.config import DEFAULT_REPORT_KEEP_RUNS
from cdcgen.core.time import parse_time_label
from cdcgen.reports.records import (
    ChangesReport,
    ExpectationOutcome,
    GenerationRows,
    RunStatus,
    TableLag,
)
from cdcgen.reports.site import record_run
from cdcgen.validation.results import ValidationResult, row_text

if TYPE_CHECKING:
    from cdcgen.changes.result import ExtractionResult


def changes_report(
    result: ExtractionResult,
    checks: ValidationResult | None = None,
    *,
    report_dir: Path | None = None,
    dag_id: str = "",
    now: datetime | None = None,
    error: str | None = None,
) -> ChangesReport:
    """The run as the report site's record; a failed check lists its rows by name, and
    the record links the run's checks page (else its Data Docs) relative to
    ``report_dir``."""
    now = now or datetime.now(UTC)
    failed = error is not None or (checks is not None and not checks.passed)
    lag = None if result.watermark is None else (now - result.watermark).total_seconds()
    outcomes = []
    for check in checks.checks if checks else []:
        details = check.describe()
        if check.samples:
            details += ": " + " | ".join(row_text(row) for row in check.samples)
        outcomes.append(ExpectationOutcome(check.check, check.passed, details))
    ids = {w.generation.label: w.generation.id for w in result.windows}
    docs = ""
    if checks is not None:
        target = checks.page or checks.report_index
        docs = str(target)
        if report_dir is not None:
            with contextlib.suppress(ValueError):  # another drive: keep the absolute path
                docs = os.path.relpath(target, report_dir)
    notes = [
        f"{p.generation}: waiting until {p.closes_at.isoformat()} ({p.reason})"
        for p in result.plan.pending
    ]
    if error:
        notes.insert(0, error)
    if result.garbage_removed:
        notes.append(f"removed {result.garbage_removed} unacknowledged window directories")
    for version in result.quarantined_versions:
        notes.append(
            f"quarantined: the rows of lake version {version} failed the row checks and were "
            "reverted (time travel to that version reads them); nothing of them is "
            "checkpointed, so the next run reads those windows again"
        )
    return ChangesReport(
        status=RunStatus.FAILED if failed else RunStatus.SUCCESS,
        window_start=result.interval.start,
        window_end=result.interval.end,
        tables=(
            TableLag(
                keyspace=result.table.keyspace,
                table=result.table.table,
                watermark=result.watermark,
                lag_seconds=lag,
                rows=result.rows_written,
                lake_versions=tuple(result.lake_versions),
            ),
        ),
        rows_per_generation=tuple(
            GenerationRows(
                generation_time=parse_time_label(label),
                generation_id=ids.get(label, ""),
                table=result.table.qualified,
                rows=rows,
            )
            for label, rows in sorted(result.rows_per_generation.items())
        ),
        expectations=tuple(outcomes),
        dag_id=dag_id,
        run_id=result.run_id,
        data_docs_path=docs,
        notes=tuple(notes),
        created_at=now,
    )


def record_changes_run(
    report_dir: Path,
    result: ExtractionResult,
    checks: ValidationResult | None = None,
    *,
    dag_id: str = "",
    error: str | None = None,
    keep_runs: int = DEFAULT_REPORT_KEEP_RUNS,
) -> Path:
    """Save the run's record and rebuild the site; returns the changes page."""
    record = changes_report(result, checks, report_dir=report_dir, dag_id=dag_id, error=error)
    return record_run(report_dir, record, keep_runs=keep_runs)
