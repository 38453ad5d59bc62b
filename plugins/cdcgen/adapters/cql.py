"""Connecting to the source/target cluster with cassandra-driver.

One place decides the things every adapter must get right: the consistency level
for metadata (QUORUM as soon as more than one node owns tokens, ONE otherwise,
as ScyllaDB itself does), connection timeouts and clean shutdown.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.cluster_access import ClusterAccess, access_for
from cdcgen.adapters.errors import AccessRefused, ConnectionFailed, refusals

if TYPE_CHECKING:
    from cassandra.cluster import Cluster, Session

    from cdcgen.config import PipelineConfig


@dataclass
class CqlClient:
    """A connected driver session plus the consistency to use for metadata."""

    cluster: Cluster
    session: Session

    @property
    def node_count(self) -> int:
        return len(self.cluster.metadata.all_hosts())

    @property
    def metadata_consistency(self) -> int:
        from cassandra import ConsistencyLevel

        level: int = ConsistencyLevel.QUORUM if self.node_count > 1 else ConsistencyLevel.ONE
        return level

    def execute(self, query: Any, params: Sequence[Any] | None = None, **kwargs: Any) -> Any:
        """Runs a metadata statement at the metadata consistency level."""
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
        return self.session.execute(statement, params, **kwargs)

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
        hosts = self.cluster.metadata.all_hosts()
        return sorted(str(host.endpoint.address) for host in hosts if not host.is_up)

    def close(self) -> None:
        self.cluster.shutdown()


def connect(
    contact_points: Sequence[str],
    port: int = 9042,
    *,
    connect_timeout: float = 10.0,
    protocol_version: int | None = None,
    access: ClusterAccess | None = None,
) -> CqlClient:
    """A client for the cluster (see :meth:`ClusterAccess.driver_options`)."""
    from cassandra.cluster import Cluster
    from cassandra.policies import RoundRobinPolicy

    cluster = Cluster(
        list(contact_points),
        port=port,
        connect_timeout=connect_timeout,
        load_balancing_policy=RoundRobinPolicy(),
        **(access or ClusterAccess()).driver_options(protocol_version),
    )
    return CqlClient(cluster, open_session(cluster))


def open_session(cluster: Cluster) -> Session:
    """``cluster.connect()``, failures sorted: refused access is terminal, the rest transient.

    The cluster is shut down on failure, so no driver thread outlives the attempt.
    """
    from cassandra.cluster import NoHostAvailable

    try:
        return cluster.connect()
    except NoHostAvailable as exc:
        cluster.shutdown()
        refused = refusals(exc)
        if refused:
            raise AccessRefused("; ".join(refused)) from None
        points = ", ".join(str(point) for point in cluster.contact_points)
        raise ConnectionFailed(f"no CQL node answered at {points}:{cluster.port}: {exc}") from exc


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
