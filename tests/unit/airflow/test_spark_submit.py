"""A refused Spark job fails its task with the job's own error, which says what to do
(cdcgen.airflow.spark_submit), not with spark-submit's command line."""

from __future__ import annotations

import json
from pathlib import Path

from cdcgen.airflow.spark_submit import CdcSparkSubmitOperator
from cdcgen.pipeline.result_files import open_attempt, result_path


def operator(output: Path) -> CdcSparkSubmitOperator:
    return CdcSparkSubmitOperator(
        task_id="extract", application="job.py", result_arg="--output",
        application_args=["--table", "shop.orders", "--output", str(output)],
    )  # fmt: skip


def test_the_job_s_error_in_its_result_file_is_the_refusal_s_message(tmp_path: Path) -> None:
    attempt = open_attempt(result_path(tmp_path, "run", "shop.orders"), 1)
    expired = "CDC data of shop.orders has expired ... Re-bootstrap shop.orders: (1) pause"
    attempt.write_text(json.dumps({"status": "data expired", "error": expired}))
    assert operator(attempt)._job_error() == expired


def test_no_result_file_or_no_error_leaves_spark_submit_s_message(tmp_path: Path) -> None:
    assert operator(tmp_path / "missing.json")._job_error() is None
    done = tmp_path / "done.json"
    done.write_text(json.dumps({"status": "done"}))
    assert operator(done)._job_error() is None
    plain = CdcSparkSubmitOperator(task_id="job", application="job.py", application_args=["x"])
    assert plain._job_error() is None
