"""Shared pytest fixtures and hooks.

Each part of the project owns one clearly marked section below; keep them
independent. Imports for all sections are at the top (ruff's isort wants them there).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings

# Tests must not depend on timings: Hypothesis's deadline and its "input generation is
# slow" health check measure the machine (a CI run failed on one 1.2 s pause).
settings.register_profile("cdcgen", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("cdcgen")

if TYPE_CHECKING:
    from cassandra.cluster import Cluster, Session

    from cdcgen_dev.cassandra import Sandbox


# =====================================================================================
# Cassandra sandbox (cdcgen_dev.cassandra): real Cassandra 5.0 nodes for tests.
#
#   cassandra_single    one node, 127.0.0.1:9042            (mark: integration)
#   cassandra_cluster3  three nodes, 127.0.0.1-3 port 9042, datacenters dc1 (nodes 1, 2)
#                       and dc2 (node 3)                (marks: integration, cluster)
#   cassandra_any       whichever is already running, else one node (e2e, demo)
#   cassandra_second    a second, separate one-node cluster, 127.0.0.2:9042, beside
#                       cassandra_single (mark: integration; never `cluster`)
#
# The first two both put node 1 on 127.0.0.1:9042, so only one runs at a time: the
# fixtures switch (stop one, start the other), and the ordering hook below runs
# `cluster` tests last so a session switches at most once. The second cluster binds
# 127.0.0.2 like the cluster's node2, so switching to `cluster` stops it too. A sandbox
# already running (e.g. `cdcgen sandbox up`) is reused and left running; one a session
# started is stopped when the last session using it ends. Concurrent sessions (xdist
# workers, parallel runs) coordinate through pid leases - see cdcgen_dev.cassandra.sharing.
# =====================================================================================


class _CassandraSandboxes:
    """This session's sandbox user plus the driver connections it opened."""

    def __init__(self) -> None:
        from cdcgen_dev.cassandra.sharing import SandboxUser

        self.user = SandboxUser()
        self.clusters: list[Cluster] = []

    def ensure(self, nodes: int | str) -> Sandbox:
        """Start (or reuse) topology ``nodes`` (1, 3 or ``"second"``) and wait until ready;
        a running topology that conflicts with it is stopped first."""
        from cdcgen_dev.cassandra import SandboxError

        try:
            return self.user.use(nodes)
        except SandboxError as exc:
            pytest.fail(f"Cassandra sandbox ({nodes!r}) unavailable: {exc}\n{exc.details}")

    def connect(self, sandbox: Sandbox, keyspace: str | None = None) -> Session:
        from cdcgen_dev.cassandra import open_cluster

        # Generous timeout: two-core CI machines stall while a JVM starts.
        cluster = open_cluster(sandbox.contact_points, request_timeout=30.0)
        self.clusters.append(cluster)
        return cluster.connect(keyspace)

    def finish(self) -> None:
        for cluster in self.clusters:
            with contextlib.suppress(Exception):
                cluster.shutdown()
        self.user.release()


@dataclass
class CassandraHandle:
    """What the fixtures yield: where Cassandra is, the Sandbox, a Session factory."""

    sandbox: Sandbox
    manager: _CassandraSandboxes = field(repr=False)

    @property
    def contact_points(self) -> list[str]:
        return self.sandbox.contact_points

    @property
    def port(self) -> int:
        return 9042

    def session(self, keyspace: str | None = None) -> Session:
        """A connected Session (shut down at session end).

        Restarts this topology first if a test switched to the other one.
        """
        if not self.sandbox.is_running():
            self.sandbox = self.manager.ensure(self.sandbox.topology.name)
        return self.manager.connect(self.sandbox, keyspace)


@pytest.hookimpl(specname="pytest_collection_modifyitems", trylast=True)
def pytest_collection_modifyitems__cassandra_cluster_last(items: list[Any]) -> None:
    """Run `cluster` tests after all others, so the session switches topology once."""
    items.sort(key=lambda item: item.get_closest_marker("cluster") is not None)


@pytest.hookimpl(trylast=True)  # after the session fixtures' teardown (``spark``'s stop)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the local Spark that tests started in this process, and its py4j gateway.

    py4j logs each connection's closing at info level, and again when the interpreter
    collects the connection at exit: by then the root handler Airflow installed writes
    to pytest's capture stream, closed, and the run ended on a "Logging error"
    traceback. Its info lines are dropped first; they say nothing a test needs."""
    module = sys.modules.get("pyspark.core.context")  # absent: no local Spark was started
    if module is None:
        return
    spark_context = module.SparkContext
    logging.getLogger("py4j").setLevel(logging.WARNING)
    context = spark_context._active_spark_context
    if context is not None:
        context.stop()
    gateway = spark_context._gateway
    if gateway is not None:
        gateway.shutdown()
        spark_context._gateway = None
        spark_context._jvm = None


@pytest.fixture(scope="session")
def _cassandra_sandboxes() -> Iterator[_CassandraSandboxes]:
    manager = _CassandraSandboxes()
    try:
        yield manager
    finally:
        manager.finish()


@pytest.fixture(scope="session")
def cassandra_single(_cassandra_sandboxes: _CassandraSandboxes) -> CassandraHandle:
    """One Cassandra node on 127.0.0.1:9042 (started, or reused if already running)."""
    return CassandraHandle(_cassandra_sandboxes.ensure(1), _cassandra_sandboxes)


@pytest.fixture(scope="module")
def contact_points(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """The sandbox node (``cassandra_single``), or ``$CDCGEN_TEST_CASSANDRA`` when set
    (started only when needed, so a module against another cluster starts nothing)."""
    override = os.environ.get("CDCGEN_TEST_CASSANDRA")
    if override:
        return tuple(override.split(","))
    return tuple(request.getfixturevalue("cassandra_single").contact_points)


@pytest.fixture(scope="session")
def cassandra_any(_cassandra_sandboxes: _CassandraSandboxes) -> CassandraHandle:
    """Whichever sandbox topology is already running (leased, left as is), else one node.

    For tests that work against either topology (e2e): use this rather than calling
    Sandbox(...).up() directly, so other sessions see the lease and do not stop it.
    """
    from cdcgen_dev.cassandra import SandboxError

    try:
        sandbox = _cassandra_sandboxes.user.use_running()
    except SandboxError as exc:
        pytest.fail(f"Cassandra sandbox unavailable: {exc}\n{exc.details}")
    return CassandraHandle(sandbox, _cassandra_sandboxes)


@pytest.fixture(scope="session")
def cassandra_cluster3(_cassandra_sandboxes: _CassandraSandboxes) -> CassandraHandle:
    """Three nodes on 127.0.0.1-3:9042, all UP, in two datacenters (``dc1``: nodes 1 and
    2, ``dc2``: node 3); use with ``@pytest.mark.cluster``."""
    return CassandraHandle(_cassandra_sandboxes.ensure(3), _cassandra_sandboxes)


@pytest.fixture(scope="session")
def cassandra_second(_cassandra_sandboxes: _CassandraSandboxes) -> CassandraHandle:
    """A second Cassandra cluster, one node on 127.0.0.2:9042, beside ``cassandra_single``.

    Its own cluster name, seed and data: no gossip with the first, so a test can use
    two genuinely separate clusters (e.g. a replication source and sink). Started on
    demand; stopped at session end, or earlier when the session switches to the
    ``cluster`` topology (whose node2 takes 127.0.0.2), so never mark its tests `cluster`.
    """
    return CassandraHandle(_cassandra_sandboxes.ensure("second"), _cassandra_sandboxes)


# ============================ end of Cassandra sandbox section ========================


# =====================================================================================
# Object store (cdcgen_dev.s3_server): moto's S3 server on loopback, once per session.
#
#   s3_server   the running server; its AWS_* (what a user sets) are in os.environ for
#               the session, so a Spark JVM started after it reaches it (a JVM reads
#               its environment once: Spark fixtures request this one first)
#   s3_lake     a fresh s3:// lake prefix on it
#   lake_root   a fresh lake, parametrized: a local folder and an s3:// prefix, so a
#               test using it runs on both
# =====================================================================================

S3_BUCKET = "cdcgen-lake"


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from cdcgen_dev.s3_server import s3_server as running

    with running(tmp_path_factory.mktemp("s3-server")) as server:
        server.create_bucket(S3_BUCKET)
        saved = {name: os.environ.get(name) for name in server.env}
        os.environ.update(server.env)
        try:
            yield server
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


@pytest.fixture
def s3_lake(s3_server: Any) -> Any:
    """A fresh lake prefix on the S3 server."""
    import uuid

    from cdcgen.adapters.lake_store import LakeLocation

    return LakeLocation.of(f"s3://{S3_BUCKET}/{uuid.uuid4().hex[:12]}")


@pytest.fixture(params=["local", "s3"])
def lake_root(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    from cdcgen.adapters.lake_store import LakeLocation

    if request.param == "s3":
        return request.getfixturevalue("s3_lake")
    return LakeLocation.of(tmp_path / "lake")


# ============================ end of object store section ============================


# ================================ Spark Connect server ================================


#: What a scheduler's environment holds (the compose file's Airflow settings and
#: connections, a source password), planted in the Spark Connect server's launcher: the
#: server and every Python it starts must hold none of it (test_spark_connect).
CONNECT_PLANTED_SECRETS = {
    "AIRFLOW_CONN_CDC_SOURCE": '{"conn_type": "cassandra", "password": "planted-source-pw"}',
    "AIRFLOW__CORE__FERNET_KEY": "planted-fernet-key",
    "AIRFLOW__API_AUTH__JWT_SECRET": "planted-jwt-secret",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "postgresql://airflow:planted-db-pw@db/airflow",
    "CDCGEN_PASSWORD": "planted-cdcgen-pw",
    "CDCGEN_SINK_PASSWORD": "planted-sink-pw",
}


@pytest.fixture(scope="session")
def connect_planted_secrets() -> dict[str, str]:
    return dict(CONNECT_PLANTED_SECRETS)


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The product's Spark Connect server (:mod:`cdcgen.spark_runtime.connect_server`) on a free
    loopback port with a token of its own, started once per session (about 6 s) from an
    environment holding :data:`CONNECT_PLANTED_SECRETS`, and stopped at its end."""
    from cdcgen_dev.spark_connect import connect_server

    environ = {**os.environ, **CONNECT_PLANTED_SECRETS}
    with connect_server(tmp_path_factory.mktemp("spark-connect"), environ=environ) as server:
        yield server
