"""Which jobs run on a Spark Connect server, what it is started with, what is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdcgen.spark_runtime.connect_server import SERVER_CLASS, server_command, server_conf
from cdcgen.spark_runtime.delta import SESSION_CONF as DELTA_CONF
from cdcgen.spark_runtime.session import (
    CONNECT_KINDS,
    REMOTE_ENV,
    SHORT_JOB_JIT,
    JobKind,
    job_conf,
    remote_for,
    server_mismatches,
)

URL = "sc://spark-connect:15002"


@pytest.mark.parametrize("kind", list(JobKind))
def test_only_the_generation_jobs_run_on_the_server(kind: JobKind) -> None:
    expected = URL if kind in (JobKind.GENERATION_EXTRACT, JobKind.VALIDATION) else None
    assert remote_for(kind, {REMOTE_ENV: URL}) == expected


@pytest.mark.parametrize("environ", [{}, {REMOTE_ENV: ""}, {REMOTE_ENV: "  "}])
def test_without_a_server_every_job_has_its_own_spark(environ: dict[str, str]) -> None:
    assert all(remote_for(kind, environ) is None for kind in JobKind)


def test_the_server_has_what_every_connect_job_fixes_at_start_but_the_short_jit() -> None:
    conf = server_conf()
    for kind in CONNECT_KINDS:
        for key, value in job_conf(kind).items():
            if SHORT_JOB_JIT.get(key) != value:
                assert conf[key] == value, key
    assert "TieredStopAtLevel" not in conf.get("spark.driver.extraJavaOptions", "")
    assert conf["spark.sql.extensions"] == DELTA_CONF["spark.sql.extensions"]


def test_the_server_command_is_a_spark_submit_of_the_connect_server() -> None:
    command = server_command(15099, "local[2]", "127.0.0.1", home=Path("/opt/spark"))
    assert command[0] == "/opt/spark/bin/spark-submit"
    assert command[command.index("--class") + 1] == SERVER_CLASS
    assert command[command.index("--master") + 1] == "local[2]"
    assert "spark.connect.grpc.binding.port=15099" in command
    assert command[-1] == "spark-internal"
    settings = dict(
        command[i + 1].split("=", 1) for i, part in enumerate(command) if part == "--conf"
    )
    assert (
        settings["spark.sql.catalog.spark_catalog"] == DELTA_CONF["spark.sql.catalog.spark_catalog"]
    )


def test_a_server_fixed_otherwise_is_named_setting_by_setting() -> None:
    needed = job_conf(JobKind.VALIDATION)
    same = {key: needed.get(key) for key in DELTA_CONF}
    assert server_mismatches(needed, same) == []
    without_delta = {**same, "spark.sql.extensions": None}
    (problem,) = server_mismatches(needed, without_delta)
    assert problem.startswith("spark.sql.extensions: the server has None")
    # Runtime settings are the session's to set, not the server's to match.
    assert server_mismatches(needed, {**same, "spark.sql.shuffle.partitions": "200"}) == []
