"""Send every per-stream read to a replica of the stream's own token.

A CDC log table is partitioned by ScyllaDB's ``CDCPartitioner``: a log partition's token
is the first 8 bytes of its stream ID, not a hash. cassandra-driver (and scylla-driver)
does not know that partitioner and hashes the ID with Murmur3 (scylladb/python-driver
#96, #407), so its token-aware routing sends each stream's query to some unrelated node,
which then coordinates a remote read. Here the token comes from the ID (``cdc`` mode) and
the replicas from the driver's own token map, which does know the ring and the keyspace's
replication. ``murmur3`` mode is for the sandbox, whose log table lives on Apache
Cassandra and really is hashed.

The range strategy's scans go to the primary replica of their token range
(:func:`range_replicas`).

Two uses: :func:`stream_replicas` tells the Spark fan-out (:mod:`cdcgen.spark_runtime.fanout`)
each stream's primary replica, so that each Spark task talks to one node, and
:func:`stream_routing_policy` is a load-balancing policy that puts a statement's
replicas first in its query plan (the driver then fails over to the other replicas,
then to any node).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.errors import RoutingError
from cdcgen.core.cdc_log import LOG_SUFFIX, LogPartitioner
from cdcgen.core.log_table import LogTable
from cdcgen.core.stream_id import cdc_partitioner_token
from cdcgen.core.token_ranges import TokenRange, ring_ranges
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN

if TYPE_CHECKING:
    from cassandra.metadata import Metadata
    from cassandra.policies import LoadBalancingPolicy
    from cassandra.pool import Host

    from cdcgen.adapters.cql import CqlClient

ANY_REPLICA = "any"
"""Group name for reads whose replicas are unknown (no token map): any node will do."""


def murmur3_token(key: bytes) -> int:
    """Murmur3Partitioner's token of serialized key bytes (``Long.MIN_VALUE`` -> MAX)."""
    from cassandra.murmur3 import murmur3

    token = int(murmur3(key))
    return MAX_TOKEN if token == MIN_TOKEN else token


def token_function(partitioner: LogPartitioner) -> Callable[[bytes], int]:
    """``cdc$stream_id`` bytes -> the ring token of that CDC log partition."""
    if partitioner is LogPartitioner.CDC:
        return cdc_partitioner_token
    if partitioner is LogPartitioner.MURMUR3:
        return murmur3_token
    raise RoutingError(f"resolve the log partitioner first (got {partitioner.value!r})")


def log_token(stream: bytes, partitioner: LogPartitioner) -> int:
    """The ring token of a CDC log partition (``cdc$stream_id`` bytes)."""
    return token_function(partitioner)(stream)


def replicas_for_token(metadata: Metadata, keyspace: str, token: int) -> list[Host]:
    """The replicas of ``token`` in ``keyspace``, primary first, from the driver's token map."""
    from cassandra.metadata import Murmur3Token

    token_map = metadata.token_map
    if token_map is None:
        return []
    return list(token_map.get_replicas(keyspace, Murmur3Token(token)))


def host_name(host: Host) -> str:
    endpoint = getattr(host, "endpoint", None)
    address = getattr(endpoint, "address", None) or getattr(host, "address", None)
    return str(address)


def primary_replica(
    metadata: Metadata, keyspace: str, stream: bytes, partitioner: LogPartitioner
) -> str:
    """Address of the first replica of a stream, or :data:`ANY_REPLICA` if unknown."""
    replicas = replicas_for_token(metadata, keyspace, log_token(stream, partitioner))
    return host_name(replicas[0]) if replicas else ANY_REPLICA


def stream_replicas(client: CqlClient, log_table: LogTable) -> Callable[[bytes], str]:
    """``stream -> primary replica address`` from the driver's token map (memoized).

    Runs on the Spark driver only: it holds the connected client's metadata.
    """
    metadata = client.cluster.metadata
    keyspace = log_table.table.keyspace
    replicas: dict[bytes, str] = {}

    def replica_of(stream: bytes) -> str:
        found = replicas.get(stream)
        if found is None:
            found = primary_replica(metadata, keyspace, stream, log_table.partitioner)
            replicas[stream] = found
        return found

    return replica_of


def _statement_table(query: Any) -> str | None:
    prepared = getattr(query, "prepared_statement", None)
    meta = getattr(prepared, "column_metadata", None)
    if meta:
        return str(meta[0].table_name)
    return None


@cache
def _policy_class() -> type[LoadBalancingPolicy]:
    from cassandra.policies import HostDistance, TokenAwarePolicy

    class StreamRoutingPolicy(TokenAwarePolicy):  # type: ignore[misc]  # the driver is untyped
        """Token-aware routing that reads a CDC log's token from the stream ID."""

        def __init__(self, child: LoadBalancingPolicy, partitioner: LogPartitioner) -> None:
            super().__init__(child, shuffle_replicas=False)
            self.partitioner = partitioner

        def make_query_plan(
            self, working_keyspace: str | None = None, query: Any = None
        ) -> Iterator[Host]:
            routing_key = getattr(query, "routing_key", None)
            table = _statement_table(query)
            keyspace = getattr(query, "keyspace", None) or working_keyspace
            if routing_key is None or keyspace is None or not (table or "").endswith(LOG_SUFFIX):
                yield from super().make_query_plan(working_keyspace, query)
                return
            child = self._child_policy
            token = log_token(routing_key, self.partitioner)
            replicas = replicas_for_token(self._cluster_metadata, keyspace, token)
            for replica in replicas:
                if replica.is_up and child.distance(replica) == HostDistance.LOCAL:
                    yield replica
            for host in child.make_query_plan(keyspace, query):
                if host not in replicas or child.distance(host) == HostDistance.REMOTE:
                    yield host

    return StreamRoutingPolicy


def stream_routing_policy(
    partitioner: LogPartitioner, child: LoadBalancingPolicy | None = None
) -> LoadBalancingPolicy:
    """A load-balancing policy for CDC log reads over ``child``: the local datacenter's
    policy when one is set (:meth:`~cdcgen.adapters.cluster_access.ClusterAccess.
    datacenter_policy`), else every node alike. Not a datacenter-aware default: it would
    guess the contact point's datacenter and never connect to another's nodes, so a read
    routed to a replica there would find no connection."""
    from cassandra.policies import RoundRobinPolicy

    if partitioner is LogPartitioner.AUTO:
        raise RoutingError("resolve the log partitioner before building the policy")
    return _policy_class()(child or RoundRobinPolicy(), partitioner)


def range_replicas(client: CqlClient, keyspace: str, at_least: int) -> list[tuple[TokenRange, str]]:
    """The ring in token ranges (:func:`cdcgen.core.token_ranges.ring_ranges`, at least
    ``at_least``), each with its primary replica's address, from the driver's token map.

    The token map holds the ring's tokens whatever the log's partitioner, so the ranges
    cover a Murmur3 log and a CDC-partitioned one alike."""
    metadata = client.cluster.metadata
    token_map = metadata.token_map
    ring = [int(t.value) for t in token_map.ring] if token_map is not None else []
    result = []
    for token_range in ring_ranges(ring, at_least):
        replicas = replicas_for_token(metadata, keyspace, token_range.high)
        result.append((token_range, host_name(replicas[0]) if replicas else ANY_REPLICA))
    return result
