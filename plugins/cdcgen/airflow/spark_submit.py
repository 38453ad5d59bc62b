"""``CdcSparkSubmitOperator``: spark-submit with the credentials handed over privately.

The job's settings reach it as ``CDCGEN_*`` variables planned by an upstream task, so they
pass through XCom and the task's rendered fields: they must not hold credentials
(:meth:`cdcgen.config.EnvSettings.to_env` leaves them out). This operator adds them at
execute time only: the username as ``CDCGEN_USERNAME`` and the password as a file
readable by this user alone (``CDCGEN_PASSWORD_FILE``), deleted when spark-submit ends.
Neither the password nor its file's content is in argv, the environment, a log or XCom;
the Spark driver reads the file once and its executors receive the credentials in their
task closures (see :mod:`cdcgen.adapters.cluster_access`). The lake's object-store
access (:mod:`cdcgen.airflow.lake_connection`) is added the same way, as the ``AWS_*``
variables the AWS SDKs of Spark's S3A, delta-rs and pyarrow read; only the spark-submit
process and what it starts see them. The driver maps this machine's class archive
(:mod:`cdcgen.spark.class_archive`) when it has one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from cdcgen.adapters.cluster_access import access_for
from cdcgen.airflow.connections import SOURCE_CONN_ID
from cdcgen.airflow.hooks import CdcSourceHook
from cdcgen.airflow.lake_connection import lake_connection_env
from cdcgen.config import PipelineConfig
from cdcgen.pipeline.result_files import open_attempt
from cdcgen.spark.class_archive import with_class_archive


class CdcSparkSubmitOperator(SparkSubmitOperator):
    """A spark-submit whose job connects to the ``cdc_conn_id`` cluster as its user."""

    def __init__(
        self, *, cdc_conn_id: str = SOURCE_CONN_ID, result_arg: str | None = None, **kwargs: Any
    ) -> None:
        """``result_arg``: the job argument naming its result file, which then becomes
        the file of this attempt (:mod:`cdcgen.pipeline.result_files`)."""
        super().__init__(**kwargs)
        self.cdc_conn_id = cdc_conn_id
        self.result_arg = result_arg

    def execute(self, context: Any) -> Any:
        config = CdcSourceHook(self.cdc_conn_id).get_config()
        with credentials_env(config) as credentials:
            planned, planned_conf = dict(self.env_vars or {}), self.conf
            planned_args = list(self.application_args or [])
            self.env_vars = {**planned, **credentials, **lake_connection_env()}
            self.conf = with_class_archive(planned_conf or {})  # this machine's, not the parser's
            self.application_args = self._attempt_args(planned_args, context["ti"].try_number)
            try:
                return super().execute(context)
            finally:
                self.env_vars, self.conf = planned, planned_conf
                self.application_args = planned_args

    def _attempt_args(self, args: list[str], attempt: int) -> list[str]:
        if self.result_arg is None or self.result_arg not in args[:-1]:
            return args
        at = args.index(self.result_arg) + 1
        return [*args[:at], str(open_attempt(args[at], attempt)), *args[at + 1 :]]


@contextmanager
def credentials_env(config: PipelineConfig) -> Iterator[dict[str, str]]:
    """The variables that give a child process ``config``'s credentials, valid inside."""
    access = access_for(config)
    if access.username is None or access.password is None:
        yield {}
        return
    folder = Path(tempfile.mkdtemp(prefix="cdcgen-credentials-"))  # mode 0700
    path = folder / "password"
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(access.password.get_secret_value())
        yield {"CDCGEN_USERNAME": access.username, "CDCGEN_PASSWORD_FILE": str(path)}
    finally:
        path.unlink(missing_ok=True)
        folder.rmdir()
