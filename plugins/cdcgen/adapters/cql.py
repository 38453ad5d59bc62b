"""Connecting to the source/target cluster with cassandra-driver.

One place decides the things every adapter must get right: the consistency level
for metadata (QUORUM as soon as more than one node owns tokens, ONE otherwise,
as ScyllaDB itself does), retries of idempotent statements, connection timeouts and
clean shutdown, and the protocol version: negotiated once per cluster and process, then
given to every later connection (:func:`protocol_version_for`).

Why reads retry here and not only in the driver: a node that has just crashed is still
up in its peers' gossip for several seconds, so a coordinator may send it its share of
a QUORUM read and time out, though two replicas of three are alive. The driver's retry
policy re-tries a timeout once on the same host at most; another attempt a moment later
succeeds. Once retries are spent, an ``Unavailable`` answer becomes
:class:`~cdcgen.adapters.errors.ReplicasUnavailable`, naming the level and the nodes down.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from cdcgen.adapters.cluster_access import ClusterAccess, access_for
from cdcgen.adapters.errors import (
    AccessRefused,
    ConnectionFailed,
    hosts_down,
    is_transient,
    refusals,
    unavailable,
)

if TYPE_CHECKING:
    from cassandra.cluster import Cluster, Session
    from cassandra.query import PreparedStatement

    from cdcgen.config import PipelineConfig

log = logging.getLogger(__name__)

#: Attempts after the first, and the first pause (doubled each time): about 15 s in all.
RETRIES = 5
RETRY_BACKOFF_SECONDS = 0.5


def state_consistency_level(node_count: int, local_datacenter: str | None) -> int:
    """The consistency of the pipeline's own state (checkpoints, watermarks, a sink's
    progress and rows): LOCAL_QUORUM in the local datacenter when one is set, else what
    the metadata gets (QUORUM on more than one node, ONE on a single node).

    Only the pipeline reads its state, always from the local datacenter, so a local
    quorum written is a local quorum read; the description tables and the generations'
    metadata, which ScyllaDB and its consumers read at QUORUM from any datacenter, keep
    :attr:`CqlClient.metadata_consistency`."""
    from cassandra import ConsistencyLevel

    if node_count <= 1:
        return int(ConsistencyLevel.ONE)
    if local_datacenter is not None:
        return int(ConsistencyLevel.LOCAL_QUORUM)
    return int(ConsistencyLevel.QUORUM)


@dataclass
class CqlClient:
    """A connected driver session plus the consistency to use for metadata and for the
    pipeline's own state (``local_datacenter``: see :func:`state_consistency_level`)."""

    cluster: Cluster
    session: Session
    _prepared: dict[str, PreparedStatement] = field(default_factory=dict, repr=False)
    local_datacenter: str | None = None

    def prepared(self, cql: str) -> Any:
        """``cql`` prepared once per client, idempotent (the driver may retry it on another
        node), at the state consistency level: what every state and replication
        statement is (their writes are idempotent by construction)."""
        statement = self._prepared.get(cql)
        if statement is None:
            statement = self.session.prepare(cql)
            statement.consistency_level = self.state_consistency
            statement.is_idempotent = True
            self._prepared[cql] = statement
        return statement

    @property
    def node_count(self) -> int:
        return len(self.cluster.metadata.all_hosts())

    @property
    def metadata_consistency(self) -> int:
        from cassandra import ConsistencyLevel

        level: int = ConsistencyLevel.QUORUM if self.node_count > 1 else ConsistencyLevel.ONE
        return level

    @property
    def state_consistency(self) -> int:
        return state_consistency_level(self.node_count, self.local_datacenter)

    def execute(self, query: Any, params: Sequence[Any] | None = None, **kwargs: Any) -> Any:
        """Runs a metadata statement at the metadata consistency level; a read (or any
        statement marked idempotent) is retried (:meth:`execute_retried`)."""
        from cassandra.query import SimpleStatement

        statement = (
            SimpleStatement(
                query,
                consistency_level=self.metadata_consistency,
                # Lets the driver retry a read on the next replica when a node dies mid-request.
                is_idempotent=query.lstrip().upper().startswith("SELECT"),
            )
            if isinstance(query, str)
            else query
        )
        if getattr(statement, "is_idempotent", False):
            return self.execute_retried(statement, params, **kwargs)
        return self.session.execute(statement, params, **kwargs)

    def execute_retried(
        self,
        statement: Any,
        params: Sequence[Any] | None = None,
        *,
        retries: int = RETRIES,
        backoff: float = RETRY_BACKOFF_SECONDS,
        **kwargs: Any,
    ) -> Any:
        """Runs an idempotent statement, retrying transient failures with backoff (see
        the module doc); anything else fails at once."""
        for attempt in range(retries + 1):
            try:
                return self.session.execute(statement, params, **kwargs)
            except Exception as error:
                if is_transient(error) and attempt < retries:
                    log.warning("%s; retrying (%d of %d)", error, attempt + 1, retries)
                    time.sleep(backoff * 2**attempt)
                    continue
                named = unavailable(error, self.hosts_down())
                if named is not None:
                    raise named from error
                raise
        raise AssertionError("unreachable")

    def table_exists(self, qualified_name: str) -> bool:
        """Whether ``keyspace.table`` exists, asked of ``system_schema`` (not the driver's
        cache, which lags behind schema changes)."""
        keyspace, _, table = qualified_name.partition(".")
        rows = self.execute(
            "SELECT table_name FROM system_schema.tables "
            "WHERE keyspace_name = %s AND table_name = %s",
            (keyspace, table),
        )
        return bool(list(rows))

    def hosts_down(self) -> list[str]:
        """Addresses of the nodes the driver currently sees down."""
        return hosts_down(self.cluster)

    def close(self) -> None:
        self.cluster.shutdown()


#: The protocol version each cluster negotiated in this process, by contact points and
#: port (see :func:`protocol_version_for`).
_NEGOTIATED: dict[tuple[frozenset[str], int], int] = {}
_NEGOTIATED_LOCK = threading.Lock()


def protocol_version_for(
    contact_points: Sequence[str], port: int, configured: int | None = None
) -> int | None:
    """The protocol version to start a new ``Cluster`` at: the configured one, else the
    one a cluster of the same contact points negotiated earlier in this process, else
    None (the driver negotiates).

    Unset, the driver offers its newest version and steps down, with a warning, each
    time a node refuses it (ScyllaDB and Cassandra 5 answer v6 that way): every task,
    job and trigger would say so again, for every cluster it opens. Negotiated once, the
    version is remembered (:func:`remember_protocol_version`) and later clusters start
    at it, explicitly, so they neither step down nor warn.
    """
    if configured is not None:
        return configured
    with _NEGOTIATED_LOCK:
        return _NEGOTIATED.get((frozenset(contact_points), port))


def remember_protocol_version(cluster: Cluster) -> None:
    """Record the version a connected ``cluster`` settled on, for the next ones."""
    version = getattr(cluster, "protocol_version", None)
    if not isinstance(version, int):
        return
    with _NEGOTIATED_LOCK:
        _NEGOTIATED[(frozenset(map(str, cluster.contact_points)), int(cluster.port))] = version


#: Seconds to open a connection, and for the control connection's first reads on it
#: (``system.local``, ``system.peers``, the schema). The driver gives those reads 2 s of
#: their own, which a busy node with a large schema overruns: the connect then fails
#: with ``OperationTimedOut`` although the node is up.
CONNECT_TIMEOUT = 10.0


#: The driver's options for a client without schema metadata: none loaded, and the
#: server's schema change events ignored (a negative window), which otherwise each cost
#: a schema agreement check even with the metadata off.
NO_SCHEMA_METADATA: Final[dict[str, bool | int]] = {
    "schema_metadata_enabled": False,
    "schema_event_refresh_window": -1,
}


def connect(
    contact_points: Sequence[str],
    port: int = 9042,
    *,
    connect_timeout: float = CONNECT_TIMEOUT,
    protocol_version: int | None = None,
    access: ClusterAccess | None = None,
    schema_metadata: bool = True,
) -> CqlClient:
    """A client for the cluster (see :meth:`ClusterAccess.driver_options` and
    :meth:`ClusterAccess.routing_policy`).

    ``schema_metadata=False`` is for a client that never looks a table up in the
    driver's metadata (a clock reader): it neither loads the schema nor reloads it
    whenever any client changes a table somewhere on the cluster, which on a busy
    cluster is a burst of ``system_schema`` reads per change. It still follows the
    topology, so every node is known."""
    from cassandra.cluster import Cluster

    access = access or ClusterAccess()
    no_schema = {} if schema_metadata else NO_SCHEMA_METADATA
    cluster = Cluster(
        list(contact_points),
        port=port,
        connect_timeout=connect_timeout,
        control_connection_timeout=connect_timeout,
        load_balancing_policy=access.routing_policy(),
        **no_schema,
        **access.driver_options(protocol_version_for(contact_points, port, protocol_version)),
    )
    return CqlClient(cluster, open_session(cluster), local_datacenter=access.local_datacenter)


def open_session(cluster: Cluster) -> Session:
    """``cluster.connect()``, failures sorted: refused access is terminal, the rest transient.

    The cluster is shut down on failure, so no driver thread outlives the attempt. The
    protocol version it settled on is remembered for the process's next clusters.
    """
    from cassandra.cluster import NoHostAvailable

    try:
        session = cluster.connect()
    except NoHostAvailable as exc:
        cluster.shutdown()
        refused = refusals(exc)
        if refused:
            raise AccessRefused("; ".join(refused)) from None
        points = ", ".join(str(point) for point in cluster.contact_points)
        raise ConnectionFailed(f"no CQL node answered at {points}:{cluster.port}: {exc}") from exc
    remember_protocol_version(cluster)
    return session


def open_client(config: PipelineConfig) -> CqlClient:
    """A connected client for the source cluster of ``config``; the caller closes it."""
    return connect(
        config.contact_points,
        config.port,
        protocol_version=config.protocol_version,
        access=access_for(config),
    )


@contextmanager
def client_for(config: PipelineConfig) -> Iterator[CqlClient]:
    """:func:`open_client`, closed on exit."""
    client = open_client(config)
    try:
        yield client
    finally:
        client.close()
