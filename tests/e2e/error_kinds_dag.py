"""A DAG with one task of each kind the package builds, each failing with a terminal or a
transient error, every task with one retry: run by ``test_error_kinds_in_airflow`` with
``dag.test()`` in a process of its own (the error kinds are set by ``ERROR_KINDS_JOBS``)."""

from __future__ import annotations

import os
import sys
from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG, task

from cdcgen.adapters.errors import ConnectionFailed
from cdcgen.airflow.connections import SPARK_CONN_ID
from cdcgen.airflow.failures import fail_fast
from cdcgen.airflow.sensors import ClockPastSensor
from cdcgen.airflow.spark_submit import CdcSparkSubmitOperator
from cdcgen.core.errors import CdcgenError, CorruptGeneration, ExitCode

#: Folder of the Spark applications ``exit_<status>.py`` (written by the test).
JOBS = os.environ["ERROR_KINDS_JOBS"]
RETRY = {"retries": 1, "retry_delay": timedelta(0)}
ERRORS: dict[str, CdcgenError] = {
    "terminal": CorruptGeneration("stream id 0x00 is not a CDC stream id"),
    "transient": ConnectionFailed("no node answered"),
}


class FailingSensor(ClockPastSensor):
    """A clock wait whose reading meets the error its kind names."""

    def __init__(self, *, kind: str, **kwargs: Any) -> None:
        super().__init__(deferrable=False, **kwargs)
        self.kind = kind

    def _check(self, config: Any) -> Any:
        raise ERRORS[self.kind]


with DAG("error_kinds", schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
    for kind in ERRORS:

        @task(task_id=f"body_{kind}", **RETRY)
        @fail_fast
        def body(kind: str = kind) -> None:
            raise ERRORS[kind]

        body()
        FailingSensor(task_id=f"sensor_{kind}", kind=kind, timeout=60, **RETRY)
        status = ExitCode.TERMINAL if kind == "terminal" else ExitCode.TRANSIENT
        CdcSparkSubmitOperator(
            task_id=f"spark_{kind}",
            application=f"{JOBS}/exit_{int(status)}.py",
            conn_id=SPARK_CONN_ID,
            **RETRY,
        )

if __name__ == "__main__":
    run = dag.test()
    sys.exit(0)
