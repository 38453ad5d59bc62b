"""Result files of the changes extract: one per attempt, names that cannot collide or
escape the results folder (cdcgen.pipeline.result_files)."""

from __future__ import annotations

import json
from pathlib import Path

from cdcgen.airflow.spark_submit import CdcSparkSubmitOperator
from cdcgen.config import PipelineConfig
from cdcgen.core.user_text import file_name
from cdcgen.pipeline import changes_plan
from cdcgen.pipeline.result_files import (
    RESULTS_DIR,
    attempt_path,
    open_attempt,
    read_result,
    result_path,
)

RUN = "manual__2026-11-23T10:00:00+00:00"


def done(path: Path, rows: int) -> None:
    """What the Spark job writes when it ends well."""
    path.write_text(json.dumps({"status": "done", "rows_written": rows, "windows": []}))


def test_a_rerun_that_dies_is_not_judged_by_the_previous_attempt(tmp_path: Path) -> None:
    config = PipelineConfig(report_dir=tmp_path)
    planned = result_path(tmp_path, RUN, "shop.orders")
    done(open_attempt(planned, 1), rows=7)
    assert read_result(tmp_path, RUN, "shop.orders").status == "done"  # type: ignore[union-attr]
    open_attempt(planned, 2)  # the task was cleared; its new job dies before writing
    summary = changes_plan.changes_run_summary(config, RUN, [{"table": "shop.orders"}])
    assert summary.status == "failed"
    assert summary.problems == (
        "shop.orders: failed: attempt 2 of the extract wrote no result (it died before its end)",
    )
    done(attempt_path(planned, 2), rows=9)  # ... or it ends well: its own result counts
    assert (
        changes_plan.changes_run_summary(config, RUN, [{"table": "shop.orders"}]).changes_rows == 9
    )


def test_the_highest_attempt_counts_numerically(tmp_path: Path) -> None:
    planned = result_path(tmp_path, RUN, "shop.orders")
    for attempt in (9, 10, 2):
        done(open_attempt(planned, attempt), rows=attempt)
    assert read_result(tmp_path, RUN, "shop.orders").rows_written == 10  # type: ignore[union-attr]


def test_a_job_run_by_hand_writes_the_planned_file(tmp_path: Path) -> None:
    planned = result_path(tmp_path, RUN, "shop.orders")
    assert read_result(tmp_path, RUN, "shop.orders") is None
    planned.parent.mkdir(parents=True)
    done(planned, rows=3)
    assert read_result(tmp_path, RUN, "shop.orders").rows_written == 3  # type: ignore[union-attr]


def test_run_ids_cannot_leave_the_results_folder_or_share_one(tmp_path: Path) -> None:
    results = (tmp_path / RESULTS_DIR).resolve()
    hostile = ["..", ".", "../../etc", "/abs", "a/../..", "", ".hidden", "\x00", "é:" * 200]
    for run_id in hostile:
        folder = result_path(tmp_path, run_id, "shop.orders").parent.resolve()
        assert folder.parent == results, run_id
        assert not folder.name.startswith(".")
    similar = [
        "manual__2026-11-23T10:00:00",
        "manual__2026-11-23T10_00_00",
        "manual  x",
        "manual_x",
    ]
    assert len({file_name(run_id) for run_id in similar}) == len(similar)
    assert file_name("..") != file_name(".") and file_name("a") != file_name("a.")


def test_the_operator_hands_each_attempt_its_own_file(tmp_path: Path) -> None:
    planned = result_path(tmp_path, RUN, "shop.orders")
    operator = CdcSparkSubmitOperator(
        task_id="extract", application="job.py", result_arg="--output",
        application_args=["--table", "shop.orders", "--output", str(planned)],
    )  # fmt: skip
    args = operator._attempt_args(list(operator.application_args or []), 3)
    assert args == ["--table", "shop.orders", "--output", str(attempt_path(planned, 3))]
    started = json.loads(attempt_path(planned, 3).read_text())
    assert started["status"] == "failed" and "attempt 3" in started["error"]
    plain = CdcSparkSubmitOperator(task_id="other", application="job.py", application_args=["x"])
    assert plain._attempt_args(["x"], 3) == ["x"]
