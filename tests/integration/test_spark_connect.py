"""Generation jobs on the long-lived Spark Connect server (``$CDCGEN_SPARK_REMOTE``).

The server is the product's (:mod:`cdcgen.spark.connect_server`), started once per
session; the validation verdicts on it are compared with the other engines' in
``test_generation_validation``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from cdcgen.core.topology import Node, make_generation
from cdcgen.core.topology_json import description_to_json, nodes_to_json
from cdcgen.extract.lake import artifact_at
from cdcgen.extract.spark_extract import read_streams
from cdcgen.spark.session import (
    REMOTE_ENV,
    JobKind,
    SparkServerMismatch,
    job_conf,
    remote_session,
)

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
    env = {**os.environ, REMOTE_ENV: spark_connect.url}
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
        remote_session(spark_connect.url, needed)


def test_a_session_on_the_server_gets_the_jobs_sql_settings(spark_connect: ConnectServer) -> None:
    conf = {**job_conf(JobKind.GENERATION_EXTRACT), "spark.sql.shuffle.partitions": "3"}
    session = remote_session(spark_connect.url, conf)
    assert session.conf.get("spark.sql.shuffle.partitions") == "3"
    assert session.conf.get("spark.sql.session.timeZone") == "UTC"
    assert session.sql("SELECT 1 AS one").collect()[0].one == 1
    # Kinds share the process's session on a server, so every call sets its kind's
    # settings again: the next job is not left with this one's.
    again = remote_session(spark_connect.url, job_conf(JobKind.GENERATION_EXTRACT))
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

    remote = remote_session(spark_connect.url, job_conf(JobKind.VALIDATION))
    assert remote is remote_session(spark_connect.url, job_conf(JobKind.GENERATION_EXTRACT))
    assert ConnectSession.getActiveSession() is None
    found = SparkDFExecutionEngine.get_or_create_spark_session()
    assert not isinstance(found, ConnectSession)
    assert found.sparkContext.applicationId == spark.sparkContext.applicationId


#: A process that uses a session on the server, then ends without stopping it.
USE_AND_EXIT = """
import sys
from cdcgen.spark.session import JobKind, job_conf, remote_session
remote_session(sys.argv[1], job_conf(JobKind.VALIDATION)).sql("SELECT 1").collect()
"""


def test_a_process_with_a_session_on_the_server_exits(spark_connect: ConnectServer) -> None:
    # Left to the interpreter's shutdown, a session's gRPC channel could wait forever
    # (about 2 processes in 5 hung after their work): sessions are closed at exit.
    for _ in range(5):
        done = subprocess.run(
            [sys.executable, "-c", USE_AND_EXIT, spark_connect.url],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
