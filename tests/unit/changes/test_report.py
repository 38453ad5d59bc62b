"""A changes run's report record, made from its outcome (cdcgen.changes.report)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cdcgen.changes.report import changes_report
from cdcgen.core.changes_result import ChangesRunResult, PendingEntry, RowChecks
from cdcgen.core.changes_status import ChangesRunStatus
from cdcgen.core.time import time_label
from cdcgen.reports.records import RunStatus

START = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
END = START + timedelta(minutes=15)
GENERATION = START - timedelta(hours=1)


def outcome(**fields: object) -> ChangesRunResult:
    return ChangesRunResult.model_validate(
        {
            "table": "shop.orders",
            "interval": (START.isoformat(), END.isoformat()),
            "run_id": "r1",
            "rows_written": 9,
            "rows_per_generation": {time_label(GENERATION): 9},
            "lake_versions": (4, 5),
            "watermark": (END - timedelta(seconds=30)).isoformat(),
            **fields,
        }
    )


def test_the_record_says_what_the_outcome_says() -> None:
    record = changes_report(
        outcome(), generation_ids={time_label(GENERATION): "g-1"}, now=END, dag_id="d"
    )
    assert record.status is RunStatus.SUCCESS
    assert (record.window_start, record.window_end) == (START, END)
    (table,) = record.tables
    assert (table.qualified_name, table.rows, table.lake_versions) == ("shop.orders", 9, (4, 5))
    assert table.watermark == END - timedelta(seconds=30) and table.lag_seconds == 30
    (rows,) = record.rows_per_generation
    assert (rows.generation_time, rows.generation_id, rows.rows) == (GENERATION, "g-1", 9)
    assert (record.run_id, record.dag_id, record.created_at) == ("r1", "d", END)
    assert record.notes == () and record.expectations == () and record.data_docs_path == ""


@pytest.mark.parametrize(
    "status", [s for s in ChangesRunStatus if s.failed] + [ChangesRunStatus("exploded")]
)
def test_a_failed_outcome_is_a_failed_record_whatever_failed(status: ChangesRunStatus) -> None:
    assert changes_report(outcome(status=status), now=END).status is RunStatus.FAILED


def test_the_notes_give_the_error_first_then_what_waits_and_what_was_set_aside() -> None:
    pending = PendingEntry(generation="g", end=END.isoformat(), closes_at="soon", reason="clock")
    failed = outcome(
        status=ChangesRunStatus.ROW_CHECKS_FAILED,
        error="colocation: 2 offending row(s)",
        pending=(pending,),
        garbage_removed=2,
        quarantined_versions=(5,),
    )
    notes = changes_report(failed, now=END).notes
    assert notes[:3] == (
        "colocation: 2 offending row(s)",
        "g: waiting until soon (clock)",
        "removed 2 unacknowledged window directories",
    )
    assert len(notes) == 4 and "lake version 5 failed the row checks" in notes[3]


def test_the_record_links_the_checks_page_else_the_data_docs(tmp_path: Path) -> None:
    docs = str(tmp_path / "changes" / "r1" / "index.html")
    page = str(tmp_path / "changes" / "r1" / "checks.html")
    with_page = outcome(checks=RowChecks(passed=True, data_docs=docs, page=page))
    linked = changes_report(with_page, report_dir=tmp_path, now=END).data_docs_path
    assert linked == "changes/r1/checks.html"
    docs_only = outcome(checks=RowChecks(passed=True, data_docs=docs))
    assert changes_report(docs_only, now=END).data_docs_path == docs  # no folder: absolute
