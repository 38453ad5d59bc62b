"""The Cassandra sandbox, for real: start nodes, read/write, token oracle, node failure.

Pure checks (configuration, error messages) run without Java. The rest use the
``cassandra_single`` / ``cassandra_cluster3`` fixtures from tests/conftest.py,
which start real Cassandra 5.0 JVMs (about 10-40 s each on two cores).

The token test is the oracle later code relies on: cassandra-driver's
``murmur3`` of the serialized partition key equals CQL ``token(pk)``, which is
what ScyllaDB's Murmur3Partitioner computes too.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cassandra import ConsistencyLevel, OperationTimedOut, ReadTimeout, Unavailable, WriteTimeout
from cassandra.cluster import NoHostAvailable
from cassandra.murmur3 import murmur3
from cassandra.query import SimpleStatement

from cdcgen_dev.cassandra import CASSANDRA_VERSION, Sandbox, SandboxError, UpResult
from cdcgen_dev.cassandra.config import cassandra_settings, cassandra_yaml
from cdcgen_dev.cassandra.jars import find_maven, pinned_version
from cdcgen_dev.cassandra.launcher import find_java, initial_heap
from cdcgen_dev.cassandra.leases import auto_marker, lease_dir, lessees
from cdcgen_dev.cassandra.ports import check_ports_free
from cdcgen_dev.cassandra.sharing import SandboxUser
from cdcgen_dev.cassandra.topology import NodeSpec, conflicting, topology

KEYSPACE = "cdcgen_sandbox_test"

# Known Murmur3Partitioner tokens (from the design notes; checked against CQL below).
KNOWN_INT_TOKENS = {1: -4069959284402364209, 2: -3248873570005575792}


# --- pure: no Java needed ---------------------------------------------------------------


def test_pom_pins_a_5_0_release() -> None:
    assert pinned_version() == CASSANDRA_VERSION
    assert CASSANDRA_VERSION.startswith("5.0.")


def test_cluster_config_lists_all_three_seeds_and_own_addresses(tmp_path: Path) -> None:
    cluster = topology("cluster", tmp_path)
    node2 = cluster.node(2)
    settings = cassandra_settings(node2, cluster)
    seeds = settings["seed_provider"][0]["parameters"][0]["seeds"]
    assert seeds == "127.0.0.1:7000,127.0.0.2:7000,127.0.0.3:7000"
    assert settings["listen_address"] == settings["rpc_address"] == "127.0.0.2"
    assert settings["auto_bootstrap"] is False
    assert settings["num_tokens"] == 16
    assert str(tmp_path) in cassandra_yaml(node2, cluster)
    assert node2.jmx_port == 7200


def test_initial_heap_never_exceeds_the_maximum() -> None:
    assert initial_heap("1G") == "256M"
    assert initial_heap("128M") == "128M"


def test_taken_port_is_reported_clearly(tmp_path: Path) -> None:
    node = topology("cluster", tmp_path).node(200)  # 127.0.0.200: unused by the sandbox
    with socket.socket() as squatter:
        squatter.bind((node.address, node.native_port))
        squatter.listen()
        with pytest.raises(SandboxError, match=r"CQL 127\.0\.0\.200:9042"):
            check_ports_free(node, grace=0)


def test_missing_java_and_maven_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(SandboxError, match="Java 17"):
        find_java()
    with pytest.raises(SandboxError, match="Maven"):
        find_maven()


def test_leases_of_exited_processes_are_void(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    leases = lease_dir(tmp_path)
    leases.mkdir()
    (leases / f"single.{gone.pid}").touch()
    (leases / f"single.{os.getpid()}").touch()
    assert lessees(tmp_path, "single") == [os.getpid()]
    assert not (leases / f"single.{gone.pid}").exists()


def test_a_topology_leased_by_another_process_is_not_displaced(tmp_path: Path) -> None:
    other_session = subprocess.Popen(["sleep", "60"])
    try:
        lease_dir(tmp_path).mkdir()
        (lease_dir(tmp_path) / f"cluster.{other_session.pid}").touch()
        with pytest.raises(SandboxError, match="still in use"):
            SandboxUser(tmp_path, wait=0).use(1)
    finally:
        other_session.kill()
        other_session.wait()


def test_a_start_that_fails_half_way_is_still_the_sessions_to_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI run's start of the second node failed while the node ran on; unmarked, the
    session took it for a developer's sandbox, started it again at its end and left it
    running. A topology a session starts is marked as its own before it starts."""
    from cdcgen_dev.cassandra.cluster import Sandbox

    def failing_up(self: Sandbox) -> None:
        raise SandboxError("node2 (127.0.0.2) exited during start-up")

    monkeypatch.setattr(Sandbox, "up", failing_up)
    with pytest.raises(SandboxError, match="exited during start-up"):
        SandboxUser(tmp_path, wait=0).use("second")
    assert auto_marker(tmp_path, "second").exists()


def test_the_second_topology_is_a_cluster_of_its_own_on_127_0_0_2(tmp_path: Path) -> None:
    second = topology("second", tmp_path)
    (node,) = second.nodes
    settings = cassandra_settings(node, second)
    assert settings["listen_address"] == settings["rpc_address"] == "127.0.0.2"
    assert settings["seed_provider"][0]["parameters"][0]["seeds"] == "127.0.0.2:7000"
    every = [second, topology("single", tmp_path), topology("cluster", tmp_path)]
    names = {cassandra_settings(n, t)["cluster_name"] for t in every for n in t.nodes}
    assert settings["cluster_name"] == "cdcgen-second" and len(names) == 3
    assert node.root == tmp_path / "second" / "node2"
    jmx = {n.jmx_port for name in ("single", "cluster") for n in topology(name, tmp_path).nodes}
    assert node.jmx_port == 7198 and node.jmx_port not in jmx
    assert second.existing_nodes() == () and second.node(2) == node


def test_topologies_on_a_shared_address_conflict() -> None:
    assert conflicting("single") == ("cluster",)
    assert conflicting("second") == ("cluster",)
    assert set(conflicting("cluster")) == {"single", "second"}


def _pretend_running(node: NodeSpec) -> subprocess.Popen[bytes]:
    """A process the sandbox takes for ``node``'s JVM (its command line names both)."""
    node.root.mkdir(parents=True)
    code = "import time; time.sleep(60)"
    fake = subprocess.Popen([sys.executable, "-c", code, "CassandraDaemon", str(node.yaml_path)])
    node.pid_file.write_text(f"{fake.pid}\n")
    return fake


@pytest.mark.parametrize(("running", "wanted"), [("cluster", "second"), ("second", "cluster")])
def test_the_second_node_and_the_cluster_refuse_to_start_together(
    tmp_path: Path, running: str, wanted: str
) -> None:
    fake = _pretend_running(topology(running, tmp_path).node(2))
    try:
        with pytest.raises(SandboxError, match=rf"{running}' sandbox is running .*127\.0\.0\.2"):
            Sandbox(wanted, state_dir=tmp_path).up()
    finally:
        fake.kill()
        fake.wait()


def test_another_sessions_second_node_blocks_the_cluster_not_the_single_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other_session = subprocess.Popen(["sleep", "60"])
    monkeypatch.setattr(Sandbox, "up", lambda self: UpResult(self.topology.name))
    try:
        lease_dir(tmp_path).mkdir()
        (lease_dir(tmp_path) / f"second.{other_session.pid}").touch()
        with pytest.raises(SandboxError, match="still in use"):
            SandboxUser(tmp_path, wait=0).use(3)
        user = SandboxUser(tmp_path, wait=0)
        assert user.use(1).topology.name == "single"  # beside the other's second node
        assert user.leased == {"single"}
        user.release()
    finally:
        other_session.kill()
        other_session.wait()


@pytest.mark.parametrize("started_by_a_session", [True, False])
def test_switching_to_the_cluster_stops_this_sessions_second_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started_by_a_session: bool
) -> None:
    """The cluster's node2 needs 127.0.0.2: the session's second node makes room, and is
    started again at the end only if a person (not a session) had started it."""
    fake = _pretend_running(topology("second", tmp_path).node(2))
    monkeypatch.setattr(Sandbox, "up", lambda self: UpResult(self.topology.name))
    try:
        user = SandboxUser(tmp_path, wait=0)
        lease_dir(tmp_path).mkdir()
        user.leased.add("second")
        (lease_dir(tmp_path) / f"second.{os.getpid()}").touch()
        if started_by_a_session:
            auto_marker(tmp_path, "second").touch()
        user.use(3)
        fake.wait(timeout=10)  # stopped: TimeoutExpired otherwise
        assert user.leased == {"cluster"} and lessees(tmp_path, "second") == []
        assert user.restore == ([] if started_by_a_session else ["second"])
    finally:
        fake.kill()
        fake.wait()


# --- one node ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def single_session(cassandra_single: Any) -> Any:
    """A session with a fresh RF=1 test keyspace on the single node.

    The keyspace is left behind for inspection (the next run recreates it): at
    module end the cluster test may already have stopped the single node.
    """
    session = cassandra_single.session()
    session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")
    session.execute(
        f"CREATE KEYSPACE {KEYSPACE} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    session.set_keyspace(KEYSPACE)
    return session


@pytest.mark.integration
def test_single_node_runs_the_pinned_release(single_session: Any) -> None:
    row = single_session.execute("SELECT release_version FROM system.local").one()
    assert row.release_version == CASSANDRA_VERSION


@pytest.mark.integration
def test_write_then_read_back(single_session: Any) -> None:
    single_session.execute("CREATE TABLE kv (pk int PRIMARY KEY, v text)")
    insert = single_session.prepare("INSERT INTO kv (pk, v) VALUES (?, ?)")
    for pk in range(20):
        single_session.execute(insert, (pk, f"value-{pk}"))
    select = single_session.prepare("SELECT v FROM kv WHERE pk = ?")
    assert single_session.execute(select, (7,)).one().v == "value-7"
    assert single_session.execute("SELECT count(*) FROM kv").one().count == 20


def _composite(*components: bytes) -> bytes:
    """A compound partition key as Cassandra hashes it: (u16 length, bytes, 0x00) each."""
    return b"".join(struct.pack(">H", len(c)) + c + b"\x00" for c in components)


@pytest.mark.integration
def test_cql_token_equals_driver_murmur3(single_session: Any) -> None:
    """The token oracle: CQL token(pk) == murmur3(serialized key), for several key shapes."""
    ints = [*KNOWN_INT_TOKENS, 0, -1, 128, 2**31 - 1, -(2**31), 123456789]
    single_session.execute("CREATE TABLE by_int (pk int PRIMARY KEY)")
    single_session.execute("CREATE TABLE by_text (pk text PRIMARY KEY)")
    single_session.execute("CREATE TABLE by_pair (a int, b text, PRIMARY KEY ((a, b)))")
    for pk in ints:
        single_session.execute("INSERT INTO by_int (pk) VALUES (%s)", (pk,))
        single_session.execute("INSERT INTO by_text (pk) VALUES (%s)", (str(pk),))
        single_session.execute("INSERT INTO by_pair (a, b) VALUES (%s, %s)", (pk, str(pk)))

    by_int = {r.pk: r.t for r in single_session.execute("SELECT pk, token(pk) AS t FROM by_int")}
    by_text = {r.pk: r.t for r in single_session.execute("SELECT pk, token(pk) AS t FROM by_text")}
    by_pair = {
        (r.a, r.b): r.t
        for r in single_session.execute("SELECT a, b, token(a, b) AS t FROM by_pair")
    }

    for pk, token in KNOWN_INT_TOKENS.items():
        assert by_int[pk] == token
    for pk in ints:
        assert by_int[pk] == murmur3(struct.pack(">i", pk)), pk
        assert by_text[str(pk)] == murmur3(str(pk).encode()), pk
        expected = murmur3(_composite(struct.pack(">i", pk), str(pk).encode()))
        assert by_pair[(pk, str(pk))] == expected, pk


def _cdcgen(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a fresh interpreter, as a user would."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "plugins")}
    program = "import sys; from cdcgen.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", program, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


@pytest.mark.integration
def test_cli_status_reports_the_running_node_as_json(cassandra_single: Any) -> None:
    result = _cdcgen("sandbox", "status")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["running"] == "single"
    assert report["cassandra_version"] == CASSANDRA_VERSION
    (node,) = [n for n in report["nodes"] if n["topology"] == "single"]
    assert node["alive"] and node["cql_port_open"]
    assert node["address"] == "127.0.0.1" and node["cql_port"] == 9042
    assert node["pid"] > 0 and node["uptime_s"] > 0


@pytest.mark.integration
def test_cli_up_is_idempotent(cassandra_single: Any) -> None:
    # `sandbox up` is a person claiming the node (it then outlives test sessions); hand a
    # node this session started back to the session, or `make test` would leave it running.
    marker = auto_marker(cassandra_single.sandbox.state_dir, "single")
    started_by_a_session = marker.exists()
    try:
        result = _cdcgen("sandbox", "up")
        assert result.returncode == 0, result.stderr
        assert "already running: node1" in result.stdout
        assert not marker.exists()  # claimed: no session may stop it now
    finally:
        if started_by_a_session:
            marker.touch()


@pytest.mark.integration
def test_any_topology_fixture_reuses_the_running_node(
    cassandra_single: Any, cassandra_any: Any
) -> None:
    assert cassandra_any.contact_points == cassandra_single.contact_points == ["127.0.0.1"]
    row = cassandra_any.session().execute("SELECT cluster_name FROM system.local").one()
    assert row.cluster_name == "cdcgen-single"


# --- three nodes ------------------------------------------------------------------------


def _at(consistency: int, query: str) -> SimpleStatement:
    return SimpleStatement(query, consistency_level=consistency)


def _eventually(attempt: Callable[[], Any], timeout: float = 60.0) -> Any:
    """Retry ``attempt`` while the driver is still reconnecting to a restarted node."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return attempt()
        except (Unavailable, ReadTimeout, OperationTimedOut, NoHostAvailable):
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


@pytest.mark.integration
@pytest.mark.cluster
def test_quorum_survives_a_node_down_and_all_does_not(cassandra_cluster3: Any) -> None:
    session = cassandra_cluster3.session()
    session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")
    session.execute(
        f"CREATE KEYSPACE {KEYSPACE} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 3}"
    )
    session.execute(f"CREATE TABLE {KEYSPACE}.kv (pk int PRIMARY KEY, v text)")
    insert = f"INSERT INTO {KEYSPACE}.kv (pk, v) VALUES (%s, %s)"
    select = f"SELECT v FROM {KEYSPACE}.kv WHERE pk = %s"
    quorum, everyone = ConsistencyLevel.QUORUM, ConsistencyLevel.ALL

    session.execute(_at(quorum, insert), (1, "before"))
    assert session.execute(_at(everyone, select), (1,)).one().v == "before"

    sandbox = cassandra_cluster3.sandbox
    sandbox.stop_node(3)
    try:
        session.execute(_at(quorum, insert), (2, "during"))
        assert session.execute(_at(quorum, select), (2,)).one().v == "during"
        with pytest.raises((Unavailable, ReadTimeout, WriteTimeout)):
            session.execute(_at(everyone, select), (1,))
    finally:
        sandbox.start_node(3)

    # Hints (or read repair) bring node 3 up to date; ALL works again.
    row = _eventually(lambda: session.execute(_at(everyone, select), (2,)).one())
    assert row.v == "during"
    session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")
