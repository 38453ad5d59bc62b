"""A terminal error fails a task on its first try and a transient one is retried, for
every kind of task the package builds: a task body, a clock sensor and a Spark job
submitted by spark-submit (whose exit status says the kind). Real Airflow: the DAG
``error_kinds_dag.py`` runs with ``dag.test()`` against a migrated home, every task with
one retry, and the tries are read back from the metadata database."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cdcgen.core.errors import ExitCode
from cdcgen_dev.airflow_home import airflow_env

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

DAG_FILE = Path(__file__).with_name("error_kinds_dag.py")


def test_a_terminal_error_fails_each_kind_of_task_at_once_and_a_transient_one_is_retried(
    airflow_home: Path, tmp_path: Path
) -> None:
    dags = tmp_path / "dags"
    dags.mkdir()
    shutil.copy(DAG_FILE, dags)
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    for status in (ExitCode.TERMINAL, ExitCode.TRANSIENT):
        (jobs / f"exit_{int(status)}.py").write_text(f"import sys\nsys.exit({int(status)})\n")
    env = airflow_env(airflow_home) | {
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "ERROR_KINDS_JOBS": str(jobs),
    }
    done = subprocess.run(
        [sys.executable, str(dags / DAG_FILE.name)],
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    with sqlite3.connect(airflow_home / "airflow.db") as db:
        tries = dict(
            db.execute(
                "SELECT task_id, state || ' after ' || try_number FROM task_instance"
            ).fetchall()
        )
    assert tries == {
        f"{task}_{kind}": f"failed after {1 if kind == 'terminal' else 2}"
        for task in ("body", "sensor", "spark")
        for kind in ("terminal", "transient")
    }, output[-6000:]
    assert "CorruptGeneration (not retried): stream id 0x00 is not a CDC stream id" in output
    assert "the Spark job refused (not retried): Cannot execute: spark-submit" in output
