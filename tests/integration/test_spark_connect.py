"""Generation jobs on the long-lived Spark Connect server (``$CDCGEN_SPARK_REMOTE``).

The server is the product's (:mod:`cdcgen.spark_runtime.connect_server`), started once per
session; the validation verdicts on it are compared with the other engines' in
``test_generation_validation``. It runs its clients' Python, so who reaches it and what
it holds are tried here too: a client without its token or with a wrong one is refused,
it listens on its configured address only, and neither it nor the Python it runs for
a client holds an Airflow setting or a credential of the environment it was started
from (``CONNECT_PLANTED_SECRETS`` in ``tests/conftest.py``).
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
import pytest
from pydantic import SecretStr

from cdcgen.core.topology import Node, make_generation
from cdcgen.core.topology_json import description_to_json, nodes_to_json
from cdcgen.generation_lake.lake_tables import artifact_at
from cdcgen.generation_lake.spark_extract import read_streams
from cdcgen.spark_runtime.connect_server import SPARK_TOKEN_ENV
from cdcgen.spark_runtime.connect_settings import TOKEN_ENV, TOKEN_FILE_ENV
from cdcgen.spark_runtime.errors import SparkServerMismatch, SparkServerRefused
from cdcgen.spark_runtime.session import JobKind, job_conf, remote_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdcgen_dev.spark_connect import ConnectServer

pytest_plugins = ("conftest_spark",)
pytestmark = pytest.mark.integration

NODES = [Node("a", 3, 12, (-(10**18), 4 * 10**17)), Node("b", 2, 0, (10**18,))]

#: The job in a process of its own, then whether that process ever had a local Spark.
JOB = """
import json, sys
from cdcgen.jobs.extract_generation import run
summary = run(sys.argv[1:])
from pyspark import SparkContext
summary["local_spark"] = SparkContext._active_spark_context is not None
print(json.dumps(summary))
"""


def test_the_extract_job_runs_on_the_server_and_starts_no_spark_of_its_own(
    spark_connect: ConnectServer, spark: SparkSession, tmp_path: Path
) -> None:
    description = description_to_json(make_generation(NODES, random.Random(3)))
    (tmp_path / "d.json").write_text(json.dumps(description))
    (tmp_path / "t.json").write_text(json.dumps(nodes_to_json(NODES)))
    argv = ["--description", str(tmp_path / "d.json"), "--generation-ts-ms", "1795860000250"]
    argv += ["--generation-id", "on-connect", "--lake", str(tmp_path / "lake")]
    argv += ["--topology", str(tmp_path / "t.json")]
    env = {**os.environ, **spark_connect.client_env()}
    done = subprocess.run(
        [sys.executable, "-c", JOB, *argv], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["local_spark"] is False
    assert summary["rows_read_back"] == summary["stream_count"] == 3 * 2 + 2
    artifact = artifact_at(Path(summary["partition"]))
    rows = read_streams(spark, artifact).orderBy("entry_index", "shard").collect()
    assert [r.stream_id_hex for r in rows] == [
        s for e in description["entries"] for s in e["streams"]
    ]


def test_a_server_without_the_jobs_settings_is_refused_by_name(
    spark_connect: ConnectServer,
) -> None:
    needed = {**job_conf(JobKind.VALIDATION), "spark.sql.extensions": "com.example.Other"}
    with pytest.raises(SparkServerMismatch, match=r"spark\.sql\.extensions: the server has"):
        remote_session(spark_connect.url, needed, spark_connect.token)


def test_a_session_on_the_server_gets_the_jobs_sql_settings(spark_connect: ConnectServer) -> None:
    conf = {**job_conf(JobKind.GENERATION_EXTRACT), "spark.sql.shuffle.partitions": "3"}
    session = remote_session(spark_connect.url, conf, spark_connect.token)
    assert session.conf.get("spark.sql.shuffle.partitions") == "3"
    assert session.conf.get("spark.sql.session.timeZone") == "UTC"
    assert session.sql("SELECT 1 AS one").collect()[0].one == 1
    # Kinds share the process's session on a server, so every call sets its kind's
    # settings again: the next job is not left with this one's.
    again = remote_session(
        spark_connect.url, job_conf(JobKind.GENERATION_EXTRACT), spark_connect.token
    )
    assert again is session
    extract_setting = job_conf(JobKind.GENERATION_EXTRACT)["spark.sql.shuffle.partitions"]
    assert again.conf.get("spark.sql.shuffle.partitions") == extract_setting != "3"


def test_a_session_on_the_server_is_not_the_one_libraries_find(
    spark_connect: ConnectServer, spark: SparkSession
) -> None:
    # GX's Spark engine asks Connect's builder for a session first: had the job's session
    # become the process's default Connect session, GX would run a local session's checks
    # (the changes' row checks) on the server, where their views do not exist.
    from great_expectations.execution_engine.sparkdf_execution_engine import (
        SparkDFExecutionEngine,
    )
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    token = spark_connect.token
    remote = remote_session(spark_connect.url, job_conf(JobKind.VALIDATION), token)
    assert remote is remote_session(spark_connect.url, job_conf(JobKind.GENERATION_EXTRACT), token)
    assert ConnectSession.getActiveSession() is None
    found = SparkDFExecutionEngine.get_or_create_spark_session()
    assert not isinstance(found, ConnectSession)
    assert found.sparkContext.applicationId == spark.sparkContext.applicationId


#: A process that uses a session on the server, then ends without stopping it.
USE_AND_EXIT = """
import sys
from cdcgen.spark_runtime.session import JobKind, job_conf, remote_session
remote_session(sys.argv[1], job_conf(JobKind.VALIDATION)).sql("SELECT 1").collect()
"""


def test_a_process_with_a_session_on_the_server_exits(spark_connect: ConnectServer) -> None:
    # Left to the interpreter's shutdown, a session's gRPC channel could wait forever
    # (about 2 processes in 5 hung after their work): sessions are closed at exit.
    for _ in range(5):
        done = subprocess.run(
            [sys.executable, "-c", USE_AND_EXIT, spark_connect.url],
            env={**os.environ, **spark_connect.client_env()},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr


# --- who reaches the server, and what it holds -------------------------------------------


def test_the_server_refuses_a_client_without_its_token_or_with_a_wrong_one(
    spark_connect: ConnectServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.delenv(TOKEN_FILE_ENV, raising=False)
    conf = job_conf(JobKind.VALIDATION)
    with pytest.raises(SparkServerRefused, match=f"presented no token; the token is {TOKEN_ENV}"):
        remote_session(spark_connect.url, conf)
    wrong = SecretStr("not-" + spark_connect.token.get_secret_value())
    with pytest.raises(SparkServerRefused, match="a token it does not accept") as caught:
        remote_session(spark_connect.url, conf, wrong)
    assert wrong.get_secret_value() not in str(caught.value)
    # The server itself, not this client, says no: PySpark's own client, no token.
    bare = ConnectSession(connection=spark_connect.url)
    try:
        with pytest.raises(SparkConnectGrpcException) as refused:
            bare.sql("SELECT 1").collect()
        assert refused.value.getGrpcStatusCode().name == "UNAUTHENTICATED"
    finally:
        bare.release_session_on_close = False
        bare.stop()
    served = remote_session(spark_connect.url, conf, spark_connect.token)
    assert served.sql("SELECT 2 AS two").collect()[0].two == 2


def server_processes(spark_connect: ConnectServer) -> list[psutil.Process]:
    """The server's JVM (its launcher became it) and every process it started."""
    root = psutil.Process(spark_connect.pid)
    return [root, *root.children(recursive=True)]


def test_the_server_listens_on_its_configured_address_only(spark_connect: ConnectServer) -> None:
    listening = [
        conn.laddr
        for process in server_processes(spark_connect)
        for conn in process.net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN
    ]
    assert spark_connect.port in {address.port for address in listening}
    # Every port of it (Connect's, the driver's RPC and block manager), not just one.
    # (Java's dual-stack sockets show an IPv4 address as ::ffff:a.b.c.d.)
    addresses = {address.ip.removeprefix("::ffff:") for address in listening}
    assert addresses == {spark_connect.host} == {"127.0.0.1"}
    # Reached through another address of this machine, the port is closed.
    others = [
        address.address
        for addresses in psutil.net_if_addrs().values()
        for address in addresses
        if address.family == socket.AF_INET and not address.address.startswith("127.")
    ]
    for other in others:
        with pytest.raises(OSError), socket.create_connection((other, spark_connect.port), 2):
            pass


def test_the_server_and_the_python_it_runs_hold_no_airflow_setting_and_no_credential(
    spark_connect: ConnectServer, connect_planted_secrets: dict[str, str]
) -> None:
    from pyspark.sql.connect.functions.builtin import udf
    from pyspark.sql.types import StringType

    token = spark_connect.token.get_secret_value()

    # A client's Python runs in a worker the server starts: what could it read?
    def environment(_: object) -> str:
        import json as json_
        import os as os_

        return json_.dumps(dict(os_.environ))

    session = remote_session(spark_connect.url, job_conf(JobKind.VALIDATION), spark_connect.token)
    as_udf = udf(environment, StringType(), useArrow=False)
    row = session.range(1).select(as_udf("id").alias("env")).collect()[0]
    environments = {"a client's Python worker": json.loads(row.env)}
    for process in server_processes(spark_connect):
        try:  # a Python worker may end between listing and reading
            environments[f"pid {process.pid} {process.name()}"] = process.environ()
            assert not [part for part in process.cmdline() if token in part], process.cmdline()
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    assert len(environments) >= 2  # the UDF's view, the JVM (and its Python workers)
    planted = list(connect_planted_secrets.values())
    for who, env in environments.items():
        assert not [name for name in env if name.startswith("AIRFLOW")], who
        assert not [name for name, value in env.items() for p in planted if p in value], who
        assert TOKEN_ENV not in env, who  # handed over as Spark's variable, only that
    jvm = psutil.Process(spark_connect.pid).environ()
    assert jvm[SPARK_TOKEN_ENV] == token
    assert token not in spark_connect.log.read_text()
