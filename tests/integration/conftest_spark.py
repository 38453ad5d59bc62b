"""A single local SparkSession for every Spark/GX test of a pytest run.

Starting Spark costs seconds (a JVM): all tests share one session (``local[2]``, few
shuffle partitions, no UI), the same settings the pipeline uses on a small machine.
``spark_remote`` is a session on the Spark Connect server (``tests/conftest.py``).
Test modules load this with ``pytest_plugins = ("conftest_spark",)``; the repository's
``tests/conftest.py`` belongs to another part of the project.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdcgen_dev.spark_connect import ConnectServer


@pytest.fixture(scope="session")
def spark(s3_server: object) -> Iterator[SparkSession]:  # the JVM inherits its AWS_*
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers import cdcgen
    from cdcgen.spark_runtime.session import spark_session

    session = spark_session("cdcgen-tests", {"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_remote(spark_connect: ConnectServer) -> SparkSession:
    """A validation session on :func:`spark_connect` (beside the local ``spark``)."""
    from cdcgen.spark_runtime.session import JobKind, job_conf, remote_session

    return remote_session(spark_connect.url, job_conf(JobKind.VALIDATION), spark_connect.token)
