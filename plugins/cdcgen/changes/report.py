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

from cdcgen.core.time import parse_time_label

if TYPE_CHECKING:
    from cdcgen.changes.result import ExtractionResult
    from cdcgen.changes.row_checks import RowCheck, RowCheckResult
    from cdcgen.reports.records import ChangesReport

CHECKS_PAGE = "checks.html"
ROWS_SHOWN = 50


def changes_report(
    result: ExtractionResult,
    checks: RowCheckResult | None = None,
    *,
    report_dir: Path | None = None,
    dag_id: str = "",
    now: datetime | None = None,
    error: str | None = None,
) -> ChangesReport:
    from cdcgen.changes.row_checks import row_text
    from cdcgen.reports.records import (
        ChangesReport,
        ExpectationOutcome,
        GenerationRows,
        RunStatus,
        TableLag,
    )

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
    checks: RowCheckResult | None = None,
    *,
    dag_id: str = "",
    error: str | None = None,
) -> Path:
    """Save the run's record and rebuild the site; returns the changes page."""
    from cdcgen.reports.site import record_run

    record = changes_report(result, checks, report_dir=report_dir, dag_id=dag_id, error=error)
    return record_run(report_dir, record)


def _offending_rows(check: RowCheck) -> str:
    from cdcgen.reports.html import esc, table

    columns: list[str] = []
    for row in check.samples[:ROWS_SHOWN]:
        columns += [c for c in row if c not in columns]
    rows = [[f"<code>{esc(row.get(c, ''))}</code>" for c in columns] for row in check.samples]
    shown = min(len(check.samples), ROWS_SHOWN)
    head = (
        f"<h3>{esc(check.check)}: {esc(check.observed)} offending row(s)"
        f"{'' if shown == check.observed else f', first {shown} shown'}</h3>"
    )
    if check.error:
        return head + f"<p>could not run: <code>{esc(check.error)}</code></p>"
    return head + table(columns, rows[:ROWS_SHOWN])


def render_checks_page(label: str, checks: RowCheckResult, data_docs: str) -> str:
    """One run's row checks: verdicts, then every failed check's offending rows by name."""
    from cdcgen.reports.html import esc, expectations_table, page
    from cdcgen.reports.records import ExpectationOutcome

    outcomes = [ExpectationOutcome(c.check, c.passed, c.describe()) for c in checks.checks]
    body = [
        f"<h1>Row checks: {esc(label)}</h1>",
        f'<p><a href="{esc(data_docs)}">Great Expectations Data Docs</a></p>',
        expectations_table(outcomes),
    ]
    failures = [c for c in checks.checks if not c.passed]
    if failures:
        body.append("<h2>Offending rows</h2>")
        body += [_offending_rows(c) for c in failures]
    if checks.skipped:
        body.append("<h2>Skipped</h2><ul>")
        body += [f"<li>{esc(s)}</li>" for s in checks.skipped]
        body.append("</ul>")
    return page(f"Row checks {label}", "\n".join(body), root="")


def write_checks_page(report_dir: Path, label: str, checks: RowCheckResult) -> Path:
    """``<report_dir>/checks.html`` next to the run's Data Docs (linked from the site)."""
    from cdcgen.reports.site import write_atomic

    path = Path(report_dir) / CHECKS_PAGE
    docs = os.path.relpath(checks.report_index, report_dir)
    write_atomic(path, render_checks_page(label, checks, docs))
    return path
