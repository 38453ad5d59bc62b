"""The preflight checks (cdcgen.pipeline.preflight): the report's verdict, and the probes
that need no cluster (Spark's master and Connect server, the lake) on real sockets and
folders. A refused permission is checked over a fake of our own client port that answers
as a cluster with an authorizer does (the sandbox has none)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cassandra import Unauthorized

from cdcgen.config import PipelineConfig
from cdcgen.core.errors import ExitCode
from cdcgen.pipeline.preflight import (
    PreflightReport,
    SourceChecks,
    check_lake,
    check_spark,
    endpoints,
    failed,
    guarded,
    passed,
)
from cdcgen.spark_runtime.spark_settings import SparkSettings


def test_one_failure_makes_the_report_fail_with_findings_and_names_the_first() -> None:
    good = PreflightReport(results=(passed("connection", "up"), passed("lake", "writable")))
    assert good.ok and good.exit_code is ExitCode.OK and good.first_failure is None
    bad = PreflightReport(
        results=(passed("connection", "up"), failed("spark", "down"), failed("lake", "full"))
    )
    assert not bad.ok and bad.exit_code is ExitCode.FINDINGS
    assert bad.first_failure is not None and bad.first_failure.check == "spark"
    assert [r.line() for r in bad.results] == [
        "ok    connection: up",
        "FAIL  spark: down",
        "FAIL  lake: full",
    ]


def test_a_probe_that_raises_is_a_failed_check_naming_the_error() -> None:
    def probe() -> Any:
        raise OSError("disk on fire")

    result = guarded("lake", probe)
    assert not result.ok and result.detail == "OSError: disk on fire"


@pytest.mark.parametrize(
    ("url", "scheme", "default", "expected"),
    [
        ("spark://m1:7078,m2", "spark://", 7077, [("m1", 7078), ("m2", 7077)]),
        ("sc://connect.example:15003/;token=x", "sc://", 15002, [("connect.example", 15003)]),
        ("sc://connect.example", "sc://", 15002, [("connect.example", 15002)]),
        ("k8s://https://api.example:6443", "k8s://", 443, [("api.example", 6443)]),
        ("k8s://api.example", "k8s://", 443, [("api.example", 443)]),
    ],
)
def test_endpoints_of_each_master_form(
    url: str, scheme: str, default: int, expected: list[tuple[str, int]]
) -> None:
    assert endpoints(url, scheme, default) == expected


@pytest.fixture
def listening() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield int(server.getsockname()[1])


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_standalone_master_and_a_connect_server_must_answer_on_their_port(
    listening: int,
) -> None:
    closed = closed_port()
    settings = SparkSettings(
        master=f"spark://127.0.0.1:{closed},127.0.0.1:{listening}",
        remote=f"sc://127.0.0.1:{closed}",
    )
    master, connect = check_spark(settings)
    assert master.ok and master.detail.endswith(f"answers at 127.0.0.1:{listening}")
    assert connect.check == "spark connect" and not connect.ok
    assert f"127.0.0.1:{closed} does not answer" in connect.detail
    bad = check_spark(SparkSettings(master="spark://127.0.0.1:notaport"))[0]
    assert not bad.ok and "ValueError" in bad.detail


def test_a_local_master_needs_a_java_that_starts(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    (tmp_path / "bin").mkdir()
    result = check_spark(SparkSettings(master="local[1]", java_home=tmp_path))[0]
    assert not result.ok and "no java" in result.detail
    broken = tmp_path / "bin" / "java"
    broken.write_text("#!/bin/sh\necho 'Error: could not create the Java VM' >&2\nexit 1\n")
    broken.chmod(0o755)
    result = check_spark(SparkSettings(master="local[1]", java_home=tmp_path))[0]
    assert not result.ok and "could not create the Java VM" in result.detail


def test_the_lake_probe_leaves_nothing_and_names_a_folder_it_cannot_write(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()
    result = check_lake(PipelineConfig(lake_path=str(lake)))
    assert result.ok, result.detail
    assert list(lake.iterdir()) == []
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = check_lake(PipelineConfig(lake_path=str(blocker / "lake")))
    assert not result.ok and result.detail.startswith("NotADirectoryError")


class RefusingClient:
    """Our client port as a cluster with an authorizer answers a role that may read but
    not write: every write is refused as the driver reports it."""

    node_count = 1

    def __init__(self, tables: list[str]) -> None:
        self.tables = tables
        self.statements: list[str] = []

    def execute(self, query: str, params: Any = None) -> Any:
        self.statements.append(query)
        if query.startswith("SELECT table_name FROM system_schema.tables"):
            return [SimpleNamespace(table_name=name) for name in self.tables]
        raise Unauthorized(
            'Error from server: code=2100 [Unauthorized] message="User reader has no MODIFY '
            'permission on <table ks.cdc_table_progress> or any of its parents"'
        )


def test_a_refused_write_fails_the_keyspace_naming_the_permission() -> None:
    client = RefusingClient(["cdc_table_progress", "cdc_bucket_checkpoints"])
    config = PipelineConfig(target_keyspace="ks")
    result = SourceChecks(client, config).state_keyspace()  # type: ignore[arg-type]
    assert not result.ok
    assert result.detail.startswith("cannot write ks.cdc_bucket_checkpoints: permission refused")
    assert "no MODIFY permission" in result.detail
    (probe,) = [s for s in client.statements if s.startswith("DELETE")]
    assert probe == (
        "DELETE FROM ks.cdc_bucket_checkpoints USING TIMESTAMP 1 "
        "WHERE keyspace_name = %s AND table_name = %s"
    )


def test_tables_not_created_yet_pass_unprobed_but_scyllas_own_must_exist() -> None:
    config = PipelineConfig(target_keyspace="ks")
    fresh = SourceChecks(RefusingClient([]), config).state_keyspace()  # type: ignore[arg-type]
    assert fresh.ok and "does not exist yet: the first run creates it" in fresh.detail
    scylla = SourceChecks(RefusingClient([]), PipelineConfig())  # type: ignore[arg-type]
    result = scylla.target_keyspace()
    assert not result.ok and result.detail.startswith("system_distributed has no ")
