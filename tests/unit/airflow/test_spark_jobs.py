"""The Spark applications the DAGs submit: files of the installed package that run as
scripts, the same jobs as the checkout's ``spark/`` entry points."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cdcgen.airflow.errors import JobFileMissing
from cdcgen.airflow.spark_jobs import (
    CHANGES_EXTRACT,
    GENERATION_EXTRACT,
    REPLICATION_BOOTSTRAP,
    SparkJob,
    job_file,
)
from cdcgen.spark_runtime.shipping import package_dir
from cdcgen_dev.paths import REPO_ROOT

JOBS = (GENERATION_EXTRACT, CHANGES_EXTRACT, REPLICATION_BOOTSTRAP)


@pytest.mark.parametrize("job", JOBS, ids=lambda job: job.name)
def test_a_submitted_application_is_a_job_module_of_the_package_that_runs_as_a_script(
    job: SparkJob, tmp_path: Path
) -> None:
    application = Path(job.application)
    assert application.parent == package_dir() / "jobs"
    # As spark-submit runs it: a file, from elsewhere, its folder first on sys.path.
    result = subprocess.run(
        [sys.executable, str(application), "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage:"), result.stdout


def test_the_checkout_s_entry_points_are_the_submitted_jobs() -> None:
    shells = {path.stem for path in (REPO_ROOT / "spark").glob("*.py")}
    assert shells == {Path(job.application).stem for job in JOBS}
    for shell in shells:
        assert (
            f"from cdcgen.jobs.{shell} import main"
            in (REPO_ROOT / "spark" / f"{shell}.py").read_text()
        )


def test_a_missing_job_module_is_named() -> None:
    with pytest.raises(JobFileMissing, match=r"cdcgen\.jobs\.nothing"):
        job_file("cdcgen.jobs.nothing")
