"""A replication run's summary (cdcgen.pipeline.replication_summary): every planned table's
record, or why it has none, in the shape of every DAG's summary."""

from __future__ import annotations

import json
from pathlib import Path

from cdcgen.core.replication_record import ReplicationRecord
from cdcgen.pipeline.replication_summary import SUMMARIES_DIR, replication_run_summary
from cdcgen.pipeline.run_summary import RunSummary, write_summary


def record(table: str, rows: int) -> ReplicationRecord:
    return ReplicationRecord(
        source_table=table,
        sink_table=f"sink.{table.split('.')[1]}",
        run_id="r1",
        consistent_until="2026-11-28T05:00:00.000+00:00",
        applied_log_rows=rows,
    )


def test_every_planned_table_has_its_record_or_a_problem(tmp_path: Path) -> None:
    done = replication_run_summary("r1", ["shop.orders", "shop.users"], [record("shop.orders", 7)])
    assert isinstance(done, RunSummary) and done.status == "failed"
    assert done.problems == ("shop.users: not replicated (its bootstrap or apply task failed)",)
    assert done.tables["shop.orders"].applied_log_rows == 7 == done.applied_log_rows
    assert done.tables["shop.users"].status == "not replicated"
    path = write_summary(tmp_path / SUMMARIES_DIR, done)
    written = json.loads(path.read_text())
    assert written["status"] == "failed" and written["run_id"] == "r1"
    assert written["tables"]["shop.orders"]["sink_table"] == "sink.orders"
    assert written["tables"]["shop.users"] == {"status": "not replicated"}

    both = [record("shop.orders", 7), record("shop.users", 0)]
    ok = replication_run_summary("r1", ["shop.orders", "shop.users"], both)
    assert ok.status == "ok" and ok.problems == () and ok.applied_log_rows == 7


def test_a_run_whose_plan_failed_says_so() -> None:
    failed = replication_run_summary("r2", None, [])
    assert failed.problems == ("planning failed: no table was examined",) and failed.tables == {}


def test_a_table_whose_sink_rejected_changes_is_a_problem_with_its_record() -> None:
    rejected = record("shop.orders", 5).model_copy(update={"rejected_count": 2})
    summary = replication_run_summary("r3", ["shop.orders"], [rejected])
    assert summary.tables["shop.orders"].rejected_count == 2
    assert summary.problems == (
        "shop.orders: 2 change(s) not applied, recorded in sink.cdc_replication_rejects",
    )
