"""One Spark configuration per kind of job, for spark-submit and in-process sessions alike.

Four kinds of Spark work run in this project: the extraction of a generation's
description, the extraction of a table's changes, validation (the flag pass over a
large generation's streams) and a replication bootstrap's copy of a table. Each gets its
configuration here, once: :func:`submit_conf` hands it to ``SparkSubmitOperator``
(``conf=``), :func:`job_session` builds a local session with it when the job runs
in-process (tests, the command line, a task without Spark).

A generation's extract and its validation are seconds of Spark work, less than a JVM's
start and its cold first job. With ``$CDCGEN_SPARK_REMOTE`` set (``sc://host:port``),
those two kinds (:data:`CONNECT_KINDS`) run on that long-lived Spark Connect server
instead (:mod:`cdcgen.spark_runtime.connect_server` starts one with their configuration): the
process that runs them starts no JVM. The changes extraction keeps its own application:
it fans out Python work over executors (broadcasts, accumulators), which Connect has not.

All kinds share the small machine's defaults (two local cores, few shuffle partitions,
no UI, UTC, Arrow) and Delta Lake (:mod:`cdcgen.spark_runtime.delta`; static, so every session
has it whichever kind started it). The changes extraction adds what its writes rely
on: microsecond Parquet timestamps, Python workers reused across tasks (each keeps its
driver session), and partition values kept as text (window and generation labels look
like numbers).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any, cast

from pydantic import SecretStr

from cdcgen.adapters.lake_store import S3Access
from cdcgen.spark_runtime.class_archive import with_class_archive
from cdcgen.spark_runtime.connect_channel import channel_builder
from cdcgen.spark_runtime.connect_settings import REMOTE_ENV as REMOTE_ENV
from cdcgen.spark_runtime.connect_settings import TOKEN_ENV, TOKEN_FILE_ENV, SparkConnectSettings
from cdcgen.spark_runtime.delta import SESSION_CONF as DELTA_CONF
from cdcgen.spark_runtime.errors import SparkServerMismatch, SparkServerRefused
from cdcgen.spark_runtime.s3a import s3a_conf
from cdcgen.spark_runtime.shipping import ship_package
from cdcgen.spark_runtime.spark_settings import SparkSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


log = logging.getLogger(__name__)


class JobKind(StrEnum):
    GENERATION_EXTRACT = "generation-extract"
    CHANGES_EXTRACT = "changes-extract"
    VALIDATION = "validation"
    REPLICATION_COPY = "replication-copy"
    REPLICATION_APPLY = "replication-apply"


SMALL_MACHINE: Mapping[str, str] = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.memory": "1g",
}
"""What every kind starts from: 2 local cores, few shuffle partitions, no UI, UTC."""

#: The JIT's first tier only. A generation's extract and its validation are seconds of
#: JVM work, over before the optimizing compiler repays its compile threads: with the
#: first tier only a session starts sooner and the first (cold) validation runs faster;
#: warm ones are alike. The
#: changes extraction keeps both tiers: its jobs run long enough for them.
SHORT_JOB_JIT: Mapping[str, str] = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}

_KIND_CONF: Mapping[JobKind, Mapping[str, str]] = {
    JobKind.GENERATION_EXTRACT: SHORT_JOB_JIT,
    JobKind.CHANGES_EXTRACT: {
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.python.worker.reuse": "true",
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    },
    JobKind.VALIDATION: SHORT_JOB_JIT,
    # Each Python worker keeps its source and sink sessions across the copy's tasks.
    JobKind.REPLICATION_COPY: {"spark.python.worker.reuse": "true"},
    # Likewise each Python worker keeps its sink session across the apply's tasks.
    JobKind.REPLICATION_APPLY: {"spark.python.worker.reuse": "true"},
}

#: The kinds a Spark Connect server can run (SQL, reads and Arrow results only).
CONNECT_KINDS: frozenset[JobKind] = frozenset({JobKind.GENERATION_EXTRACT, JobKind.VALIDATION})


_APP_NAMES: Mapping[JobKind, str] = {
    JobKind.GENERATION_EXTRACT: "cdcgen-extract",
    JobKind.CHANGES_EXTRACT: "cdcgen-changes",
    JobKind.VALIDATION: "cdcgen-validate",
    JobKind.REPLICATION_COPY: "cdcgen-replication-copy",
    JobKind.REPLICATION_APPLY: "cdcgen-replication-apply",
}


def job_conf(kind: JobKind) -> dict[str, str]:
    """The Spark configuration of ``kind``."""
    return {**SMALL_MACHINE, **DELTA_CONF, **_KIND_CONF[kind]}


def submit_conf(kind: JobKind) -> dict[str, str]:
    """``SparkSubmitOperator(conf=...)`` of a job of ``kind`` (importable at DAG parse time)."""
    return job_conf(kind)


def submit_env() -> dict[str, str]:
    """Environment for spark-submit: Spark's Python must be the one that has cdcgen."""
    return {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def remote_for(kind: JobKind, environ: Mapping[str, str] | None = None) -> str | None:
    """The Spark Connect server ``kind`` runs on, or None for a session of its own."""
    given = SparkSettings.read_env(environ, only={"remote"})
    url = (SparkSettings.validated(given).remote or "").strip()
    return url if url and kind in CONNECT_KINDS else None


def job_session(kind: JobKind, app_name: str | None = None) -> SparkSession:
    """A session for ``kind``: on the Spark Connect server :func:`remote_for` names, else
    the active session or a new one configured for ``kind``, workers on this Python."""
    url = remote_for(kind)
    if url is not None:
        log.info("the %s job runs on the Spark Connect server", kind)
        return remote_session(url, job_conf(kind))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return spark_session(app_name or _APP_NAMES[kind], _KIND_CONF[kind])


#: Settings a running Spark fixed at its start; a Connect session can read, not set them.
STATIC_SQL_CONF = frozenset(DELTA_CONF) - {"spark.databricks.delta.snapshotPartitions"}


def server_mismatches(needed: Mapping[str, str], server: Mapping[str, str | None]) -> list[str]:
    """What a server fixed at its start (``needed``'s static settings: Delta's extension
    and catalog) but differently from ``needed``; each as ``key: server has X, needs Y``."""
    return [
        f"{key}: the server has {server.get(key)!r}, the job needs {value!r}"
        for key, value in needed.items()
        if key in STATIC_SQL_CONF and server.get(key) != value
    ]


_remote_lock = threading.Lock()
#: Keyed by URL and token: a session refused for its token is not the one to reuse.
_remote_sessions: dict[tuple[str, str | None], Any] = {}


@atexit.register
def _close_remote_sessions() -> None:
    """Close this process's Connect sessions while its threads still run.

    Left to their finalizers at interpreter shutdown, a session's gRPC channel can wait
    forever for a thread that is gone: runs of the extract job hung now and then after
    their work was done. The server is not asked to release them (it may be down, and each
    retry waits); it drops them when they have been idle for its session timeout.
    """
    with _remote_lock:
        sessions = list(_remote_sessions.values())
        _remote_sessions.clear()
    for session in sessions:
        session.release_session_on_close = False
        with contextlib.suppress(Exception):
            session.stop()


def remote_session(
    url: str, conf: Mapping[str, str], token: SecretStr | None = None
) -> SparkSession:
    """A session on the Spark Connect server at ``url`` with ``conf``'s SQL settings.

    One per server and process, made by Connect's constructor and kept here, not by a
    builder. ``SparkSession.builder.remote`` switches the whole process to Connect, and
    Connect's own builder makes its session the process's default one, which GX's Spark
    engine (it asks Connect's builder first) would then use instead of a local session:
    this one is the caller's alone, and a local session can live beside it.

    ``token`` (default: ``$CDCGEN_SPARK_CONNECT_TOKEN`` or its file) is presented on
    every call (:mod:`cdcgen.spark_runtime.connect_channel`); a server that refuses it is
    :class:`SparkServerRefused`. The server's static settings are checked next
    (:class:`SparkServerMismatch`): a server started otherwise would fail later, inside
    a job, with Spark's message instead.
    """
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    if token is None:
        token = SparkConnectSettings.from_env().secret()
    cache_key = (url, None if token is None else token.get_secret_value())
    with _remote_lock:
        session = _remote_sessions.get(cache_key)
        if session is None or session.is_stopped:
            session = _remote_sessions[cache_key] = ConnectSession(
                connection=channel_builder(url, token)
            )
    try:
        found = {key: session.conf.get(key, None) for key in conf if key in STATIC_SQL_CONF}
    except SparkConnectGrpcException as exc:
        if exc.getGrpcStatusCode().name != "UNAUTHENTICATED":
            raise
        _forget(cache_key, session)
        given = "no token" if token is None else "a token it does not accept"
        raise SparkServerRefused(
            f"the Spark Connect server (${REMOTE_ENV}) refused this client (UNAUTHENTICATED), "
            f"which presented {given}; the token is {TOKEN_ENV} or {TOKEN_FILE_ENV}"
        ) from None
    problems = server_mismatches(conf, found)
    if problems:
        listed = "; ".join(problems)
        raise SparkServerMismatch(
            f"the Spark Connect server (${REMOTE_ENV}) cannot run it: {listed}"
        )
    for key, value in conf.items():
        if key.startswith("spark.sql.") and key not in STATIC_SQL_CONF:
            session.conf.set(key, value)
    return cast("SparkSession", session)


def _forget(key: tuple[str, str | None], session: Any) -> None:
    """Drop a refused session: nothing on the server to release, nothing to reuse."""
    with _remote_lock:
        if _remote_sessions.get(key) is session:
            del _remote_sessions[key]
    session.release_session_on_close = False
    with contextlib.suppress(Exception):
        session.stop()


def spark_session(app_name: str = "cdcgen", conf: Mapping[str, str] | None = None) -> SparkSession:
    """The active session, or a new one with :data:`SMALL_MACHINE`, Delta, S3A (for lakes
    on S3, :func:`~cdcgen.spark_runtime.s3a.s3a_conf`) and ``conf`` over it; its JVM maps the
    class archive (:mod:`cdcgen.spark_runtime.class_archive`) when there is one.

    Under spark-submit the master comes from the submit command (``--master``); run as a
    plain Python process it is ``$CDCGEN_SPARK_MASTER`` or ``local[2]``. On a cluster
    master the session ships this ``cdcgen`` to its executors
    (:func:`~cdcgen.spark_runtime.shipping.ship_package`).
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name)
    spark = SparkSettings.from_env()
    if spark.gateway_port is None:  # not launched by spark-submit
        builder = builder.master(spark.master)
    access = S3Access.from_env()  # where s3:// lakes are; the keys stay in the environment
    s3a = s3a_conf(access.endpoint_url, access.region)
    settings = with_class_archive({**SMALL_MACHINE, **DELTA_CONF, **s3a, **(conf or {})})
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    ship_package(session)
    return session
