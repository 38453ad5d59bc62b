"""``CdcSparkSubmitOperator``: spark-submit with the credentials handed over privately.

The job's settings reach it as ``CDCGEN_*`` variables planned by an upstream task, so
they pass through XCom and the task's rendered fields: they must not hold credentials
(:meth:`cdcgen.env_settings.EnvSettings.to_env` leaves them out). This operator adds them at
execute time only: the username as ``CDCGEN_USERNAME`` and the password as a file
readable by this user alone (``CDCGEN_PASSWORD_FILE``), deleted when spark-submit ends.
Neither the password nor its file's content is in argv, the environment, a log or XCom;
the Spark driver reads the file once and its executors receive the credentials in their
task closures (see :mod:`cdcgen.adapters.cluster_access`). The lake's object-store
access (:mod:`cdcgen.airflow.lake_connection`) is added the same way, as the ``AWS_*``
variables the AWS SDKs of Spark's S3A, delta-rs and pyarrow read; only the spark-submit
process and what it starts see them. A job that also writes to a replication sink
(``sink_conn_id``) gets the sink connection's credentials the same way, as
``CDCGEN_SINK_USERNAME`` and ``CDCGEN_SINK_PASSWORD_FILE``. The driver maps this
machine's class archive (:mod:`cdcgen.spark_runtime.class_archive`) when it has one.

All of these variables reach the job through spark-submit's inherited environment, not
the hook's ``env_vars``, which it turns into ``--conf`` entries on the command line for
YARN and Kubernetes masters; the driver therefore runs in client mode, on every master
(:mod:`cdcgen.airflow.spark_masters`, which refuses a connection asking for cluster mode).

spark-submit inherits the Airflow process's environment, which may hold other secrets:
connections and variables defined as ``AIRFLOW_CONN_*`` / ``AIRFLOW_VAR_*`` (the source
connection's password among them), Airflow's settings (``AIRFLOW__*``: the Fernet key,
the JWT secret, the database URL), a ``CDCGEN_PASSWORD`` or ``CDCGEN_SINK_PASSWORD``, and
the Spark Connect server's token (``CDCGEN_SPARK_CONNECT_TOKEN``).
None of it is the job's business, and every process Spark starts would carry it
(readable in ``/proc``, in a core dump, by anything it runs), so those variables are
left out of spark-submit's environment (:func:`without_inherited_secrets`).

Each job's operator also says what the job reads and writes, for Airflow's OpenLineage
integration (``get_openlineage_facets_on_start``; :mod:`cdcgen.airflow.lineage`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from cdcgen.access_settings import AccessSettings
from cdcgen.adapters.cluster_access import access_for
from cdcgen.airflow.connections import SOURCE_CONN_ID
from cdcgen.airflow.errors import JobRefused
from cdcgen.airflow.failures import fail_fast
from cdcgen.airflow.hooks import CdcSourceHook
from cdcgen.airflow.lake_connection import lake_connection_env, use_lake_connection
from cdcgen.airflow.spark_masters import client_conf, client_mode_hook
from cdcgen.config import PipelineConfig
from cdcgen.core.errors import ExitCode
from cdcgen.pipeline.result_files import open_attempt
from cdcgen.spark_runtime.class_archive import with_class_archive
from cdcgen.spark_runtime.connect_settings import TOKEN_ENV as CONNECT_TOKEN_ENV
from cdcgen.spark_runtime.connect_settings import TOKEN_FILE_ENV as CONNECT_TOKEN_FILE_ENV
from cdcgen.spark_runtime.session import JobKind, remote_for

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage
    from openlineage.client.event_v2 import Dataset

    from cdcgen.core.lineage_names import DatasetName


class CdcSparkSubmitOperator(SparkSubmitOperator):
    """A spark-submit whose job connects to the ``cdc_conn_id`` cluster as its user.

    The job's exit status decides a retry (:class:`~cdcgen.core.errors.ExitCode`): a
    terminal error fails the task at once, anything else is left to its retries.
    """

    template_fields = (*SparkSubmitOperator.template_fields, "table")

    def __init__(
        self,
        *,
        cdc_conn_id: str = SOURCE_CONN_ID,
        sink_conn_id: str | None = None,
        result_arg: str | None = None,
        table: Any = None,
        **kwargs: Any,
    ) -> None:
        """``result_arg``: the job argument naming its result file, which then becomes
        the file of this attempt (:mod:`cdcgen.pipeline.result_files`); ``sink_conn_id``:
        the replication sink the job also connects to (its credentials are added);
        ``table``: the table the job works on, as the grid names a mapped task
        (:mod:`cdcgen.airflow.map_index`; templated, so that a mapped group's argument
        reaches it)."""
        super().__init__(**kwargs)
        self.cdc_conn_id = cdc_conn_id
        self.sink_conn_id = sink_conn_id
        self.result_arg = result_arg
        self.table = table

    @fail_fast
    def execute(self, context: Any) -> Any:
        from airflow.sdk.exceptions import AirflowException

        planned, planned_conf = dict(self.env_vars or {}), self.conf
        planned_args = list(self.application_args or [])
        job_env = {name: str(value) for name, value in planned.items()}
        try:
            return self._submit(context, job_env, planned_conf or {}, planned_args)
        except AirflowException as exc:
            # The job says the kind of its error with its exit status (ExitCode).
            if f"Error code is: {int(ExitCode.TERMINAL)}." in str(exc):
                raise JobRefused(self._job_error() or str(exc)) from exc
            raise
        finally:
            self.env_vars, self.conf = planned, planned_conf
            self.application_args = planned_args
            self._hook = None

    def _submit(
        self, context: Any, job_env: Mapping[str, str], conf: Mapping[str, str], args: list[str]
    ) -> Any:
        # The hook would put env_vars on the command line (YARN, Kubernetes): the job's
        # variables go into spark-submit's environment instead (cdcgen.airflow.spark_masters).
        self.env_vars = None
        self.application_args = self._attempt_args(args, context["ti"].try_number)
        self.conf = client_conf(with_class_archive(conf))  # this machine's, not the parser's
        # The hook resolves the Spark connection (maybe an AIRFLOW_CONN_ variable) when it
        # is built: before the environment loses those. A refused one is terminal.
        self._hook = client_mode_hook(self._get_hook, self._conn_id)
        config = CdcSourceHook(self.cdc_conn_id).get_config()
        with ExitStack() as stack:
            credentials = stack.enter_context(credentials_env(config))
            if self.sink_conn_id is not None:
                from cdcgen.replication.replication_run import SINK_PREFIX

                sink = CdcSourceHook(self.sink_conn_id).get_config()
                credentials |= stack.enter_context(credentials_env(sink, SINK_PREFIX))
            job = {**job_env, **credentials}
            with submit_environment({**job, **lake_connection_env()}):
                return super().execute(context)

    def _job_error(self) -> str | None:
        """The error the job wrote to this attempt's result file (which says what to do
        about it: an expired log names the re-bootstrap), rather than spark-submit's
        command line; None when it wrote none."""
        args = list(self.application_args or [])
        if self.result_arg is None or self.result_arg not in args[:-1]:
            return None
        try:
            written = json.loads(Path(args[args.index(self.result_arg) + 1]).read_text())
        except (OSError, ValueError):
            return None
        error = written.get("error") if isinstance(written, dict) else None
        return str(error) if error else None

    def _attempt_args(self, args: list[str], attempt: int) -> list[str]:
        if self.result_arg is None or self.result_arg not in args[:-1]:
            return args
        at = args.index(self.result_arg) + 1
        return [*args[:at], str(open_attempt(args[at], attempt)), *args[at + 1 :]]

    # --- OpenLineage (cdcgen.airflow.lineage) ------------------------------------------

    def lineage_datasets(self) -> tuple[list[DatasetName], list[DatasetName]]:
        """What the job reads and writes (inputs, outputs), from the rendered fields; a
        job kind that does not say reports none."""
        return [], []

    def _job_argument(self, name: str) -> str | None:
        args = [str(arg) for arg in self.application_args or []]
        return args[args.index(name) + 1] if name in args[:-1] else None

    def get_openlineage_facets_on_start(self) -> OperatorLineage[Dataset, Any]:
        """The job's inputs and outputs, for Airflow's OpenLineage integration. Called
        with the task's fields rendered (the mapped group's table or generation, the
        planned job's variables), before the job runs; the same on completion."""
        from cdcgen.airflow.lineage import operator_lineage

        inputs, outputs = self.lineage_datasets()
        return operator_lineage(inputs, outputs)

    def get_openlineage_facets_on_complete(
        self, task_instance: Any
    ) -> OperatorLineage[Dataset, Any]:
        return self.get_openlineage_facets_on_start()


class GenerationExtractOperator(CdcSparkSubmitOperator):
    """A generation's extract: spark-submit, or in this task's process on the Spark
    Connect server ``$CDCGEN_SPARK_REMOTE`` names (:mod:`cdcgen.spark_runtime.connect_server`).

    On the server the job starts no JVM: it reads the description here, writes the lake
    partition here, and has the server read it back. Its configuration is the one the
    spark-submit would get (the planned ``CDCGEN_*`` variables) with the connection's
    credentials, which then never leave this process.

    ``generation``: the detect step's record of the generation the job extracts, as the
    grid names a mapped task (templated, as the table of the other jobs).
    """

    template_fields = (*CdcSparkSubmitOperator.template_fields, "generation")

    def __init__(self, *, generation: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.generation = generation

    @fail_fast
    def execute(self, context: Any) -> Any:
        if remote_for(JobKind.GENERATION_EXTRACT) is None:
            return super().execute(context)
        from cdcgen.jobs.extract_generation import run

        access = CdcSourceHook(self.cdc_conn_id).get_config().access
        use_lake_connection()  # the job writes the lake from this process
        config = PipelineConfig.from_env(self.env_vars or {}).with_overrides(
            **{field: getattr(access, field) for field in AccessSettings.CREDENTIALS}
        )
        summary = run(list(self.application_args or []), config)
        self.log.info(
            "extracted on the Spark Connect server: %s", json.dumps(summary, sort_keys=True)
        )
        return None

    def lineage_datasets(self) -> tuple[list[DatasetName], list[DatasetName]]:
        """The source's generation metadata tables in, the lake's generation table out."""
        from cdcgen.airflow import lineage
        from cdcgen.airflow.xcom import from_xcom
        from cdcgen.core.generation import Generation

        if not self.generation:
            return [], []
        config = lineage.planned_config(self.env_vars)
        generation = from_xcom(Generation, self.generation)
        return lineage.generation_sources(config), [lineage.generation_lake(config, generation)]


class ChangesExtractOperator(CdcSparkSubmitOperator):
    """A CDC table's changes extract (``spark/extract_changes.py``): spark-submit of the
    job, whose lineage is the table's CDC log table in, the lake's changes table out."""

    def lineage_datasets(self) -> tuple[list[DatasetName], list[DatasetName]]:
        from cdcgen.airflow import lineage

        if not self.table:
            return [], []
        config = lineage.planned_config(self.env_vars)
        return [lineage.log_table(config, str(self.table))], [
            lineage.changes_lake(config, str(self.table))
        ]


class ReplicationBootstrapOperator(CdcSparkSubmitOperator):
    """A sink table's bootstrap (``spark/replication_bootstrap.py``), submitted only when
    the plan gave it arguments: a table that needs no bootstrap is skipped. A bootstrap
    the job refused (the message says what to run) fails without retries; one that
    stopped part-way is retried, and the retry resumes its copy."""

    def execute(self, context: Any) -> Any:
        from airflow.sdk.exceptions import AirflowSkipException

        if not self.application_args:
            raise AirflowSkipException("the sink table needs no bootstrap")
        return super().execute(context)

    def lineage_datasets(self) -> tuple[list[DatasetName], list[DatasetName]]:
        """The source base table in, the sink table on the sink cluster out; none when
        the plan gave no bootstrap (the task is skipped)."""
        from cdcgen.airflow import lineage
        from cdcgen.replication.replication_run import sink_environment

        source_table = self._job_argument("--table")
        sink_table = self._job_argument("--sink-table")
        if source_table is None or sink_table is None:
            return [], []
        env = {k: str(v) for k, v in (self.env_vars or {}).items()}
        source = lineage.planned_config(env)
        sink = lineage.planned_config(sink_environment(env))
        return [lineage.cluster_table(source, source_table)], [
            lineage.cluster_table(sink, sink_table)
        ]


@contextmanager
def credentials_env(config: PipelineConfig, prefix: str = "CDCGEN_") -> Iterator[dict[str, str]]:
    """The variables that give a child process ``config``'s credentials, valid inside
    (``prefix``: ``CDCGEN_SINK_`` for a replication sink's)."""
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
        yield {
            AccessSettings.variable("username", prefix): access.username,
            AccessSettings.variable("password_file", prefix): str(path),
        }
    finally:
        path.unlink(missing_ok=True)
        folder.rmdir()


#: What spark-submit must not inherit (prefixes and names of environment variables).
SECRET_PREFIXES = ("AIRFLOW_CONN_", "AIRFLOW_VAR_", "AIRFLOW__")
#: The Connect server's token too: spark-submitted jobs never use that server.
SECRET_NAMES = frozenset(
    {
        AccessSettings.variable("password"),
        AccessSettings.variable("password", "CDCGEN_SINK_"),
        CONNECT_TOKEN_ENV,
        CONNECT_TOKEN_FILE_ENV,
    }
)


def is_inherited_secret(name: str) -> bool:
    """True for a variable of the Airflow process that may hold a secret."""
    return name.startswith(SECRET_PREFIXES) or name in SECRET_NAMES


@contextmanager
def without_inherited_secrets(
    environ: MutableMapping[str, str] = os.environ,
) -> Iterator[None]:
    """``environ`` without its secret-bearing variables inside, as it was after.

    SparkSubmitHook starts spark-submit with a copy of ``os.environ`` plus the job's
    variables and has no way to leave one out, so they are taken out for the length of
    the submit (a task runs alone in its process)."""
    removed = {name: environ.pop(name) for name in list(environ) if is_inherited_secret(name)}
    try:
        yield
    finally:
        environ.update(removed)


@contextmanager
def submit_environment(
    job: Mapping[str, str], environ: MutableMapping[str, str] = os.environ
) -> Iterator[None]:
    """``environ`` as spark-submit must inherit it inside: without the Airflow process's
    secrets, with the job's variables; as it was after.

    The job's variables reach a driver in client mode this way on every master, and
    never a command line (:mod:`cdcgen.airflow.spark_masters`)."""
    with without_inherited_secrets(environ):
        replaced = {name: environ.get(name) for name in job}
        environ.update(job)
        try:
            yield
        finally:
            for name, value in replaced.items():
                if value is None:
                    environ.pop(name, None)
                else:
                    environ[name] = value
