"""The sink cluster's writes over cassandra-driver (:class:`cdcgen.ports.SinkWrites`).

A Python client's cost is per request, not per row, so the apply packs many CDC
batches into one request; this adapter binds each batch's statements once (their
serialized values give the request's size, their routing key the replica the partition
lives on), sends requests many at a time and retries transient failures with backoff.
A request the sink refuses for its content (``InvalidRequest``: a value, or the
request's size) is handed back, never retried as it is: the caller splits it to name
the change refused.

The sink's clock is the largest of its nodes' clocks, so that a replayed cell does not
outlive its source (but for the wait of a request retried after a timeout, which carries
the TTL computed before it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.clock_reader import CqlClockReader
from cdcgen.adapters.cql import RETRIES, RETRY_BACKOFF_SECONDS
from cdcgen.adapters.errors import SinkClockUnreadable, is_transient
from cdcgen.core.gc_pause import paused_collections
from cdcgen.core.sink_statements import Statement
from cdcgen.core.time import to_micros
from cdcgen.ports import Refusal, SinkBatch

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient

log = logging.getLogger(__name__)


class CqlSinkWrites:
    """The sink's writes through ``client``, ``concurrency`` requests in flight."""

    def __init__(self, client: CqlClient, concurrency: int) -> None:
        self.client = client
        self.concurrency = concurrency
        self._consistency = client.state_consistency  # read once: it lists the hosts
        self._one_node = client.node_count == 1

    def clock_us(self) -> int:
        readings = [c.reading for c in CqlClockReader(self.client).read_clocks()]
        known = [r for r in readings if r is not None]
        if not known:
            raise SinkClockUnreadable("no node of the sink answered with its clock")
        return to_micros(max(known))

    def bind(self, keyspace: str, statements: Sequence[Statement]) -> SinkBatch:
        prepared = self.client.prepared
        bound = [prepared(s.cql).bind(s.values) for s in statements]
        size = sum(len(v) for b in bound for v in b.values if isinstance(v, bytes))
        return SinkBatch(bound, self._replica(keyspace, bound[0]), size)

    def _replica(self, keyspace: str, statement: Any) -> str:
        """The first replica of a bound statement's partition ("" when unknown)."""
        if self._one_node:
            return ""  # one node holds every partition
        token_map = self.client.cluster.metadata.token_map
        if token_map is None or statement.routing_key is None:
            return ""
        token = token_map.token_class.from_key(statement.routing_key)
        replicas = token_map.get_replicas(keyspace, token)
        return str(replicas[0].address) if replicas else ""

    def execute(self, requests: Sequence[Sequence[SinkBatch]]) -> list[Refusal]:
        with paused_collections():  # thousands of requests, no cycle among them
            work = [self._request(batches) for batches in requests]
        refused = execute_all(self.client, work, self.concurrency)
        self._one_node = self.client.node_count == 1  # for the next batches bound
        return [Refusal(n, reason) for n, reason in refused]

    def _request(self, batches: Sequence[SinkBatch]) -> Any:
        """One request for CDC batches (each single-partition: applied atomically and in
        isolation whatever shares the request)."""
        from cassandra.query import BatchStatement, BatchType

        statements = [s for batch in batches for s in batch.bound]
        if len(statements) == 1:
            return statements[0]
        # A batch has a consistency level of its own (its statements' are ignored).
        batch = BatchStatement(batch_type=BatchType.UNLOGGED, consistency_level=self._consistency)
        for statement in statements:
            batch.add(statement)
        batch.is_idempotent = True
        return batch


def execute_all(client: CqlClient, requests: Sequence[Any], concurrency: int
                ) -> list[tuple[int, str]]:  # fmt: skip
    """Runs every request, many at a time, until each is acknowledged, retrying transient
    failures with backoff; returns ``(index, the sink's words)`` of each one the sink
    refused for its content (``InvalidRequest``). Any other failure raises."""
    from cassandra import InvalidRequest
    from cassandra.concurrent import execute_concurrent

    refused: list[tuple[int, str]] = []
    pending = list(enumerate(requests))
    for attempt in range(RETRIES + 1):
        results = execute_concurrent(
            client.session,
            [(request, None) for _, request in pending],
            concurrency=concurrency,
            raise_on_first_error=False,
        )
        failed = []
        for (index, request), (ok, result) in zip(pending, results, strict=True):
            if ok:
                continue
            if isinstance(result, InvalidRequest):
                refused.append((index, f"the sink refused it: {result}"))
            elif is_transient(result) and attempt < RETRIES:
                failed.append((index, request))
            else:
                raise result
        if not failed:
            break
        log.warning("%d write(s) failed transiently; retrying", len(failed))
        time.sleep(RETRY_BACKOFF_SECONDS * 2**attempt)
        pending = failed
    return sorted(refused)
