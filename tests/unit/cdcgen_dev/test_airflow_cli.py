"""The launcher ``dags_test`` runs Airflow's CLI through: the status the ``airflow``
script would give, and the exit handlers run, though the interpreter is not torn down."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cdcgen_dev.airflow_cli import exit_status


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (3, 3), ("DagRun failed", 1)])
def test_exit_status_is_the_interpreters(code: object, status: int) -> None:
    assert exit_status(code) == status


def _leave(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    handler = tmp_path / "handler-ran"
    script = (
        "import atexit, sys\n"
        "from cdcgen_dev.airflow_cli import leave_after\n"
        f"atexit.register(lambda: open({str(handler)!r}, 'w').write('yes'))\n"
        f"def command():\n    {body}\n"
        "leave_after(command)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        ("print('done')", 0, ""),
        ("sys.exit('DagRun failed')", 1, "DagRun failed"),
        ("sys.exit(4)", 4, ""),
    ],
)
def test_the_command_s_status_and_the_exit_handlers_survive(
    tmp_path: Path, body: str, status: int, said: str
) -> None:
    done = _leave(tmp_path, body)
    assert done.returncode == status, done.stderr
    assert said in done.stderr
    assert (tmp_path / "handler-ran").read_text() == "yes"  # atexit handlers still ran


def test_a_process_pool_the_command_left_open_does_not_keep_the_process() -> None:
    """As the OpenLineage provider's pool under ``airflow dags test``: the process ends."""
    import subprocess
    import sys

    code = (
        "from concurrent.futures import ProcessPoolExecutor\n"
        "from cdcgen_dev.airflow_cli import leave_after\n"
        "pool = ProcessPoolExecutor(1)\n"
        "pool.submit(int).result()\n"
        "leave_after(lambda: None)\n"
    )
    ended = subprocess.run([sys.executable, "-c", code], timeout=60, check=False)
    assert ended.returncode == 0
