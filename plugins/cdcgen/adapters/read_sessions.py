"""The driver sessions CDC log reads go through: one per Python worker, routed by stream.

A read session differs from :func:`cdcgen.adapters.cql.connect`'s on purpose: its
load-balancing policy sends each query to a replica of its stream's own token
(:func:`~cdcgen.adapters.stream_routing.stream_routing_policy`), rows come as tuples
(the Arrow conversion indexes them), and the driver never retries by itself, because
:func:`~cdcgen.adapters.read_retries.with_retries` does, with backoff, page by page.
Spark tasks open it from a :class:`SessionKey` that travels in the task closure. A
bootstrap's copy tasks (:mod:`cdcgen.replication.spark_copy`) use the same sessions for
the source table and the sink, Murmur3-routed (a base table's key is hashed), through
:func:`shared_client`.
"""

from __future__ import annotations

import atexit
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cdcgen.adapters.cluster_access import ClusterAccess
from cdcgen.adapters.cql import CONNECT_TIMEOUT, CqlClient, open_session, protocol_version_for
from cdcgen.adapters.stream_routing import stream_routing_policy
from cdcgen.core.cdc_log import LogPartitioner

if TYPE_CHECKING:
    from cassandra.cluster import Cluster, Session


@dataclass(frozen=True)
class SessionKey:
    """Everything that decides how a read session connects and routes (hashable)."""

    contact_points: tuple[str, ...]
    port: int
    partitioner: LogPartitioner
    request_timeout: float
    #: None: negotiate, as :func:`cdcgen.adapters.cql.connect` does.
    protocol_version: int | None = None
    #: Credentials and TLS; their ``repr`` is masked, they travel in the task closure.
    access: ClusterAccess = field(default_factory=ClusterAccess)


def open_read_session(key: SessionKey) -> tuple[Cluster, Session]:
    """A driver session for CDC log reads: stream-aware routing, tuples, no driver retries.

    The driver still fails over to the next replica when a connection breaks.
    """
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import FallthroughRetryPolicy
    from cassandra.query import tuple_factory

    profile = ExecutionProfile(
        load_balancing_policy=stream_routing_policy(
            key.partitioner,
            key.access.datacenter_policy() if key.access.local_datacenter else None,
        ),
        retry_policy=FallthroughRetryPolicy(),
        request_timeout=key.request_timeout,
        row_factory=tuple_factory,
    )
    cluster = Cluster(
        list(key.contact_points),
        port=key.port,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connect_timeout=CONNECT_TIMEOUT,
        control_connection_timeout=CONNECT_TIMEOUT,
        **key.access.driver_options(
            protocol_version_for(key.contact_points, key.port, key.protocol_version)
        ),
    )
    return cluster, open_session(cluster)


_SHARED: dict[SessionKey, tuple[Cluster, Session]] = {}
_SHARED_LOCK = threading.Lock()


def shared_session(key: SessionKey) -> Session:
    """One session per Python worker and key, reused by every task the worker runs.

    Spark reuses Python workers between tasks, so a run opens a handful of connections
    instead of one per task; the sessions close when the worker exits.
    """
    with _SHARED_LOCK:
        entry = _SHARED.get(key)
        if entry is None or entry[0].is_shutdown:
            entry = open_read_session(key)
            _SHARED[key] = entry
        return entry[1]


_CLIENTS: dict[SessionKey, CqlClient] = {}


def shared_client(key: SessionKey) -> CqlClient:
    """The worker's shared session as a :class:`~cdcgen.adapters.cql.CqlClient`: its
    statements prepared once per worker, at the metadata consistency level, retried like
    every state statement (a bootstrap's copy writes and records through it)."""
    session = shared_session(key)
    with _SHARED_LOCK:
        client = _CLIENTS.get(key)
        if client is None or client.session is not session:
            client = _CLIENTS[key] = CqlClient(
                session.cluster, session, local_datacenter=key.access.local_datacenter
            )
        return client


@atexit.register
def close_shared_sessions() -> None:
    with _SHARED_LOCK:
        for cluster, _ in _SHARED.values():
            cluster.shutdown()
        _SHARED.clear()
        _CLIENTS.clear()
