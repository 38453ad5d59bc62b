"""Run a DAG once with ``airflow dags test`` in a subprocess, against a chosen Airflow home.

Used by ``make demo`` and the e2e tests.  ``airflow dags test`` runs every task in
one process, runs deferred triggers inline (no triggerer needed) and exits
non-zero when the run fails, which makes it a faithful, cheap end-to-end run.  A
subprocess keeps Airflow's configuration, logging and JVMs out of the caller; it runs
Airflow's CLI through :mod:`cdcgen_dev.airflow_cli`, which ends the process once the
exit handlers ran instead of tearing the interpreter down object by object.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cdcgen.airflow.connections import DEFAULT_SPARK_MASTER
from cdcgen.pipeline.run_summary import SUMMARIES_DIR
from cdcgen_dev.airflow_home import DEFAULT_HOME, airflow_env, airflow_executable
from cdcgen_dev.isolation import isolated_env


@dataclass(frozen=True)
class DagTestRun:
    dag_id: str
    started_at: float  # time.time() when the subprocess started
    returncode: int
    seconds: float
    output: str
    log_path: Path | None

    @property
    def succeeded(self) -> bool:
        return self.returncode == 0

    def deferred_inline(self) -> int:
        """How many times a trigger ran inline (a sensor really deferred)."""
        return self.output.count("[DAG TEST] running trigger in line")

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.output.splitlines()[-lines:])


def latest_summary(
    report_dir: Path, since: float = 0.0, folder: Path | None = None
) -> dict[str, Any] | None:
    """The newest run summary written at or after ``since`` (``time.time()``), if any.

    ``folder``: where the DAG writes its summaries; default the generations DAG's
    ``<report_dir>/summaries`` (the changes DAG's are in ``summaries/changes``).

    ``airflow dags test`` names its run after the moment it starts, so the caller
    cannot know the run id in advance; the summary task writes one file per run.
    """
    folder = folder or Path(report_dir) / SUMMARIES_DIR
    files = [p for p in folder.glob("*.json") if p.stat().st_mtime >= since - 1]
    if not files:
        return None
    newest = max(files, key=lambda p: p.stat().st_mtime)
    summary: dict[str, Any] = json.loads(newest.read_text())
    return summary


def dags_test(
    dag_id: str,
    *,
    home: Path = DEFAULT_HOME,
    source: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    conf: Mapping[str, Any] | None = None,
    logical_date: datetime | None = None,
    timeout: float = 1800,
    log_path: Path | None = None,
    on_line: Callable[[str], None] | None = None,
    spark_master: str = DEFAULT_SPARK_MASTER,
    python: Path | None = None,
) -> DagTestRun:
    """``airflow dags test <dag_id> <logical_date>``; output captured (and kept in ``log_path``).

    ``env`` adds ``CDCGEN_*`` settings over the caller's environment; ``source`` is the
    ``cdc_source`` connection's JSON form.  ``on_line`` sees each output line as it
    comes (progress display; tests that act when a task reaches a given point).
    ``spark_master``: the ``cdcgen_spark`` connection's master (``spark://host:port`` for
    a standalone cluster). ``python``: another virtualenv's interpreter, whose own
    ``airflow`` runs the DAG with nothing of the caller's import path (the provider
    installed from its wheel, :mod:`cdcgen_dev.provider_venv`).
    """
    moment = (logical_date or datetime.now(UTC)).replace(microsecond=0)
    base = dict(env or {})
    inherited = _inherited() if python is None else isolated_env()
    full_env = airflow_env(
        home, source=source, spark_master=spark_master, base={**inherited, **base}, python=python
    )
    if python is None:  # Airflow's CLI, through the launcher that skips the teardown
        launcher = airflow_executable().parent / "python"
        command = [str(launcher), "-m", "cdcgen_dev.airflow_cli", "dags", "test", dag_id]
    else:  # as a deployment runs it
        command = [str(airflow_executable(python)), "dags", "test", dag_id]
    command.append(moment.isoformat())
    if conf:
        command += ["--conf", json.dumps(dict(conf))]
    began, started_at = time.monotonic(), time.time()
    deadline = began + timeout
    lines: list[str] = []
    with subprocess.Popen(
        command,
        env=full_env,
        cwd=home if python is not None else None,  # not the checkout: Spark's workers add it
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        start_new_session=True,  # its own process group: a timeout also ends spark-submit
    ) as process:
        assert process.stdout is not None
        timer = threading.Timer(timeout, _kill_group, (process.pid,))
        timer.start()
        try:
            for line in process.stdout:
                lines.append(line)
                if on_line is not None:
                    on_line(line.rstrip("\n"))
            code = process.wait()
        finally:
            timer.cancel()
    if time.monotonic() >= deadline:
        lines.append(f"\n[cdcgen] airflow dags test {dag_id} killed after {timeout:g} s\n")
        code = code or -1
    output = "".join(lines)
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(output)
    return DagTestRun(
        dag_id=dag_id,
        started_at=started_at,
        returncode=code,
        seconds=round(time.monotonic() - began, 1),
        output=output,
        log_path=log_path,
    )


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _inherited() -> dict[str, str]:
    return dict(os.environ)
