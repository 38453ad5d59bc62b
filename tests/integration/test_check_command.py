"""`cdcgen check` and the connection's Test button against a real Cassandra.

The source is the emulator's raft tables under a prefix of their own, with a committed
generation and a CDC table; the target and state keyspace holds the pipeline's tables,
created by the pipeline's own stores. The command runs in-process, configured the way a
person configures it: ``CDCGEN_*`` variables. Every check passes on it, the probe writes
leave nothing a reader sees; then each thing the check must name is broken in turn: the
keyspace prefix, the source mode, the host, the Spark master, the lake folder.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.cql import CqlClient
from cdcgen.adapters.publisher import CqlDescriptionPublisher
from cdcgen.cli import main
from cdcgen.config import PipelineConfig
from cdcgen.core.errors import ExitCode
from cdcgen.core.generation import SourceMode
from cdcgen.schema import SourceSchema
from cdcgen_dev.emulator import SandboxCluster, create_cdc_table, orders_table
from cdcgen_dev.emulator.schema_setup import drop_keyspaces
from cdcgen_dev.sandbox import sandbox_config

if TYPE_CHECKING:
    from tests.conftest import CassandraHandle

pytestmark = pytest.mark.integration

PREFIX = "t_check_"
KEYSPACE = f"{PREFIX}ks"
TARGET = f"{PREFIX}target"
CDC_TTL = 3600


@dataclass(frozen=True)
class World:
    config: PipelineConfig
    env: dict[str, str]


@pytest.fixture(scope="module")
def world(
    client: CqlClient, cassandra_single: CassandraHandle, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    schema = SourceSchema(PREFIX)
    drop_keyspaces(client, schema)
    for keyspace in (KEYSPACE, TARGET):
        client.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    cluster = SandboxCluster(client, schema)
    cluster.join_node(SourceMode.RAFT, shards=2, vnodes=2, seed=7)
    create_cdc_table(cluster, orders_table(KEYSPACE, cdc_ttl=CDC_TTL))
    config = sandbox_config(
        PREFIX,
        contact_points=tuple(cassandra_single.contact_points),
        port=cassandra_single.port,
        source_mode=SourceMode.RAFT,
        target_keyspace=TARGET,
        lake_path=tmp_path_factory.mktemp("check-lake"),
    )
    CqlDescriptionPublisher(client, config).ensure_tables()
    CqlCheckpointStore(client, config.checkpoint_keyspace).ensure_schema()
    env = {**config.to_env(), "CDCGEN_SPARK_MASTER": "local[1]"}
    yield World(config, env)
    for keyspace in (KEYSPACE, TARGET):
        client.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    drop_keyspaces(client, schema)


def check(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    *flags: str,
) -> tuple[int, str]:
    for variable in os.environ:
        if variable.startswith("CDCGEN_"):
            monkeypatch.delenv(variable)
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    status = main(["check", *flags])
    out, err = capsys.readouterr()
    assert err == "", err  # every finding is on standard output
    return status, out


def line_of(out: str, check: str) -> str:
    found = [line for line in out.splitlines() if line.split(":", 1)[0].split()[-1:] == [check]]
    assert len(found) == 1, out
    return found[0]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_every_check_passes_and_the_probe_writes_leave_nothing_to_read(
    world: World,
    client: CqlClient,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out = check(monkeypatch, capsys, world.env)
    assert status == ExitCode.OK, out
    assert [line.split()[0] for line in out.splitlines()] == ["ok"] * 8, out
    assert "source mode: raft: 1 generation(s), the latest at " in out
    assert f"cdc tables: 1: {KEYSPACE}.orders (TTL {CDC_TTL} s)" in out
    assert "may write cdc_streams_descriptions_v2, cdc_generation_timestamps" in out
    assert "may write cdc_bucket_checkpoints, cdc_table_progress" in out
    for table in ("cdc_generation_timestamps", "cdc_streams_descriptions_v2", "cdc_table_progress"):
        assert list(client.session.execute(f"SELECT * FROM {TARGET}.{table}")) == []
    assert sorted(p.name for p in Path(world.config.lake_path).iterdir()) == []

    status, out = check(monkeypatch, capsys, world.env, "--json")
    assert status == ExitCode.OK
    results = [json.loads(line) for line in out.splitlines()]
    assert [r["check"] for r in results] == [
        "connection", "source mode", "cdc tables", "log tables", "target keyspace",
        "state keyspace", "spark", "lake",
    ]  # fmt: skip
    assert all(r["ok"] for r in results)
    assert results[2]["tables"] == [{"table": f"{KEYSPACE}.orders", "ttl_seconds": CDC_TTL}]


def test_a_wrong_keyspace_prefix_or_source_mode_is_named(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = {**world.env, "CDCGEN_SOURCE_KEYSPACE_PREFIX": "t_nowhere_"}
    status, out = check(monkeypatch, capsys, wrong)
    assert status == ExitCode.FINDINGS, out
    said = line_of(out, "mode")
    assert said.startswith("FAIL  source mode: raft: cannot read t_nowhere_system.topology"), out
    assert "CDCGEN_SOURCE_KEYSPACE_PREFIX" in said
    assert line_of(out, "connection").startswith("ok")

    gossip = {**world.env, "CDCGEN_SOURCE_MODE": "gossip"}
    status, out = check(monkeypatch, capsys, gossip)
    assert status == ExitCode.FINDINGS, out
    said = line_of(out, "mode")
    assert said.startswith("FAIL  source mode: gossip: no generation in "), out
    assert "the source holds raft generations: set CDCGEN_SOURCE_MODE" in said


def test_an_unreachable_host_an_unanswering_spark_and_an_unwritable_lake_are_named(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the lake's folder should be")
    port = closed_port()
    broken = {
        **world.env,
        "CDCGEN_PORT": str(closed_port()),
        "CDCGEN_SPARK_MASTER": f"spark://127.0.0.1:{port}",
        "CDCGEN_LAKE_PATH": str(blocker / "lake"),
    }
    status, out = check(monkeypatch, capsys, broken)
    assert status == ExitCode.FINDINGS, out
    lines = out.splitlines()
    assert len(lines) == 3, out  # no session: the cluster's other checks do not run
    assert lines[0].startswith("FAIL  connection: ConnectionFailed: no CQL node answered"), out
    assert lines[1].startswith(f"FAIL  spark: master spark://127.0.0.1:{port}: 127.0.0.1:{port}")
    assert "does not answer" in lines[1]
    assert lines[2].startswith("FAIL  lake: NotADirectoryError: "), out
    assert not (blocker / "lake").exists()


def test_the_connections_test_button_runs_the_clusters_checks(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cdcgen.airflow.hooks import CdcSourceHook

    config = world.config
    for variable, value in config.to_env().items():
        monkeypatch.setenv(variable, value)
    connection = {
        "conn_type": "cdcgen",
        "host": ",".join(config.contact_points),
        "port": config.port,
        "extra": {"source_mode": "raft", "source_keyspace_prefix": PREFIX},
    }
    monkeypatch.setenv("AIRFLOW_CONN_CDCGEN_CHECKED", json.dumps(connection))
    ok, message = CdcSourceHook("cdcgen_checked").test_connection()
    assert ok, message
    assert message.startswith("connected to cluster ") and f"{KEYSPACE}.orders" in message
    wrong = {**connection, "extra": {"source_mode": "raft", "source_keyspace_prefix": "t_no_"}}
    monkeypatch.setenv("AIRFLOW_CONN_CDCGEN_CHECKED", json.dumps(wrong))
    ok, message = CdcSourceHook("cdcgen_checked").test_connection()
    assert not ok
    assert message.startswith("FAIL  source mode: raft: cannot read t_no_system.topology"), message
    closed = {**connection, "port": closed_port()}
    monkeypatch.setenv("AIRFLOW_CONN_CDCGEN_CHECKED", json.dumps(closed))
    ok, message = CdcSourceHook("cdcgen_checked").test_connection()
    assert not ok and message.startswith("ConnectionFailed: "), message


def test_generations_list_prints_one_json_object_per_generation_with_or_without_json(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for variable, value in world.env.items():
        monkeypatch.setenv(variable, value)
    assert main(["generations", "list"]) == ExitCode.OK
    plain = capsys.readouterr().out
    assert main(["generations", "list", "--json"]) == ExitCode.OK
    assert capsys.readouterr().out == plain
    (line,) = [json.loads(text) for text in plain.splitlines()]
    assert sorted(line) == ["id", "kind", "published", "timestamp", "timestamp_ms"]
    assert (line["kind"], line["published"]) == ("source", False)
    assert main(["generations", "list", "--source-only"]) == ExitCode.OK
    assert "published" not in json.loads(capsys.readouterr().out)
