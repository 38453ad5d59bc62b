"""A changes run as a record of the report site (:mod:`cdcgen.reports`).

The record carries what the changes page shows: the interval, per table the consistency
watermark and the lag behind it, rows per generation, and every row expectation with
its offending rows spelled out (a misrouted row appears with its stream, ``cdc$time``,
``batch_seq_no`` and base key). It is made from the run's outcome (its status says
whether the run failed), so the page says what the result file and the DAG's summary
say; the run (:func:`cdcgen.changes.changes_run.run_changes`) calls :func:`record_changes_run`
at its end, whether the checks passed or not.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from cdcgen.config import DEFAULT_REPORT_KEEP_RUNS
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.changes_result import ChangesRunResult
from cdcgen.core.time import parse_moment, parse_time_label
from cdcgen.reports.records import (
    ChangesReport,
    ExpectationOutcome,
    GenerationRows,
    RunStatus,
    TableLag,
)
from cdcgen.reports.site import record_run
from cdcgen.validation.results import ValidationResult, row_text


def changes_report(
    outcome: ChangesRunResult,
    verdict: ValidationResult | None = None,
    *,
    generation_ids: Mapping[str, str] | None = None,
    report_dir: Path | None = None,
    dag_id: str = "",
    now: datetime | None = None,
) -> ChangesReport:
    """The run's outcome as the report site's record. The outcome carries a few rows
    per check, the record every one: ``verdict`` is the checks' full verdict, each
    failed check listed with its rows by name. ``generation_ids`` name the generations
    of ``rows_per_generation`` (by label). The record links the run's checks page
    (else its Data Docs) relative to ``report_dir``."""
    now = now or datetime.now(UTC)
    table = TableRef.parse(outcome.table)
    watermark = _moment(outcome.watermark, "watermark")
    lag = None if watermark is None else (now - watermark).total_seconds()
    start, end = outcome.interval or (None, None)
    ids = generation_ids or {}
    return ChangesReport(
        status=RunStatus.FAILED if outcome.failed else RunStatus.SUCCESS,
        window_start=_moment(start, "interval start"),
        window_end=_moment(end, "interval end"),
        tables=(
            TableLag(
                keyspace=table.keyspace,
                table=table.table,
                watermark=watermark,
                lag_seconds=lag,
                rows=outcome.rows_written,
                lake_versions=outcome.lake_versions,
            ),
        ),
        rows_per_generation=tuple(
            GenerationRows(
                generation_time=parse_time_label(label),
                generation_id=ids.get(label, ""),
                table=table.qualified,
                rows=rows,
            )
            for label, rows in sorted(outcome.rows_per_generation.items())
        ),
        expectations=_expectations(verdict),
        dag_id=dag_id,
        run_id=outcome.run_id,
        data_docs_path=_docs(outcome, report_dir),
        notes=_notes(outcome),
        created_at=now,
    )


def _moment(text: str | None, what: str) -> datetime | None:
    return None if text is None else parse_moment(text, what)


def _expectations(verdict: ValidationResult | None) -> tuple[ExpectationOutcome, ...]:
    outcomes = []
    for check in verdict.checks if verdict else []:
        details = check.describe()
        if check.samples:
            details += ": " + " | ".join(row_text(row) for row in check.samples)
        outcomes.append(ExpectationOutcome(check.check, check.passed, details))
    return tuple(outcomes)


def _docs(outcome: ChangesRunResult, report_dir: Path | None) -> str:
    """The run's checks page, else its Data Docs ("" when no check ran)."""
    checks = outcome.checks
    docs = "" if checks is None else checks.page or checks.data_docs or ""
    if docs and report_dir is not None:
        with contextlib.suppress(ValueError):  # another drive: keep the absolute path
            docs = os.path.relpath(docs, report_dir)
    return docs


def _notes(outcome: ChangesRunResult) -> tuple[str, ...]:
    notes = [f"{p.generation}: waiting until {p.closes_at} ({p.reason})" for p in outcome.pending]
    if outcome.error:
        notes.insert(0, outcome.error)
    if outcome.garbage_removed:
        notes.append(f"removed {outcome.garbage_removed} unacknowledged window directories")
    for version in outcome.quarantined_versions:
        notes.append(
            f"quarantined: the rows of lake version {version} failed the row checks and were "
            "reverted (time travel to that version reads them); nothing of them is "
            "checkpointed, so the next run reads those windows again"
        )
    return tuple(notes)


def record_changes_run(
    report_dir: Path,
    outcome: ChangesRunResult,
    verdict: ValidationResult | None = None,
    *,
    generation_ids: Mapping[str, str] | None = None,
    dag_id: str = "",
    keep_runs: int = DEFAULT_REPORT_KEEP_RUNS,
) -> Path:
    """Save the run's record and rebuild the site; returns the changes page."""
    record = changes_report(
        outcome, verdict, generation_ids=generation_ids, report_dir=report_dir, dag_id=dag_id
    )
    return record_run(report_dir, record, keep_runs=keep_runs)
