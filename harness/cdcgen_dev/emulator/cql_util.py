"""Prepared statements and concurrent execution for the emulator's writes.

Every value is bound (never formatted into CQL text); statements are prepared once per
session and run at the client's metadata consistency (QUORUM on a multi-node sandbox),
the way ScyllaDB writes its own metadata. Bulk writes go through
``execute_concurrent_with_args`` so that a generation of thousands of rows, or a
workload of thousands of writes a second, is not bound by round trips.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cassandra.cluster import Session
    from cassandra.query import PreparedStatement

    from cdcgen.adapters.cql import CqlClient

DEFAULT_CONCURRENCY = 64

_PREPARED: weakref.WeakKeyDictionary[Session, dict[tuple[str, int], PreparedStatement]] = (
    weakref.WeakKeyDictionary()
)


def prepared(client: CqlClient, cql: str, consistency: int | None = None) -> PreparedStatement:
    """``cql`` prepared on the client's session, cached, at the metadata consistency."""
    level = client.metadata_consistency if consistency is None else consistency
    cache = _PREPARED.setdefault(client.session, {})
    key = (cql, level)
    statement = cache.get(key)
    if statement is None:
        statement = client.session.prepare(cql)
        statement.consistency_level = level
        statement.is_idempotent = is_read(cql)
        cache[key] = statement
    return statement


def is_read(cql: str) -> bool:
    """Reads may be retried on another replica when a node dies mid-request.

    The driver only moves an in-flight request to the next host when the statement
    is marked idempotent; without it a crashed node turns a QUORUM read that two live
    replicas could answer into ``OperationTimedOut``.
    """
    return cql.lstrip().upper().startswith("SELECT")


def execute(client: CqlClient, cql: str, params: Sequence[Any] = ()) -> Any:
    """Run one bound statement and return its result set.

    A read is retried with the client's backoff: right after a node is killed, the live
    coordinators can time out while the driver still routes to the dead one, and the
    emulator's own state must still be readable then.
    """
    statement = prepared(client, cql)
    if is_read(cql):
        return client.execute_retried(statement, tuple(params))
    return client.session.execute(statement, tuple(params))


def execute_many(
    client: CqlClient,
    cql: str,
    params: Iterable[Sequence[Any]],
    concurrency: int = DEFAULT_CONCURRENCY,
) -> int:
    """Run one statement for every parameter tuple, ``concurrency`` in flight; returns the count.

    The first failure is raised: a half-written generation must be noticed by the caller.
    """
    from cassandra.concurrent import execute_concurrent_with_args

    rows = [tuple(p) for p in params]
    if rows:
        execute_concurrent_with_args(
            client.session,
            prepared(client, cql),
            rows,
            concurrency=concurrency,
            raise_on_first_error=True,
        )
    return len(rows)
