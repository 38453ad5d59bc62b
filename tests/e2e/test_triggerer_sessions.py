"""A backlog of deferred clock waits costs the triggerer what one wait costs.

Fifty ``ClockPastTrigger.run()`` coroutines run in one event loop, as the triggerer runs
them, against the real Cassandra over the real protocol. Measured from outside the code
under test: this process's TCP connections to the native port and its threads (psutil),
and the requests the server counted on those connections (``system_views.clients``).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psutil
import pytest

from cdcgen.core.time import naive_as_utc, to_millis

if TYPE_CHECKING:
    from cassandra.cluster import Session

    from tests.conftest import CassandraHandle

WAITERS = 50
INTERVAL = 0.2
NATIVE_PORT = 9042
#: asyncio's default executor, which runs the blocking reads: min(32, cores + 4) threads.
EXECUTOR_THREADS = min(32, (os.cpu_count() or 1) + 4)


def connections(port: int = NATIVE_PORT) -> set[int]:
    """Local ports of this process's established TCP connections to ``port``."""
    return {
        c.laddr.port
        for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    }


def threads() -> int:
    return psutil.Process().num_threads()


def requests_by_port(observer: Session) -> dict[int, int]:
    """What the server counted, per client port (every client of the node)."""
    rows = observer.execute("SELECT port, request_count FROM system_views.clients")
    return {row.port: row.request_count for row in rows}


@dataclass
class Sample:
    at: float
    connections: set[int]
    threads: int
    requests: dict[int, int]


async def sample(observer: Session) -> Sample:
    requests = await asyncio.to_thread(requests_by_port, observer)
    return Sample(time.monotonic(), connections(), threads(), requests)


def fresh_keyspace(observer: Session, keyspace: str) -> None:
    """``keyspace``, empty: dropped first, since the sandbox outlives a killed run."""
    observer.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
    observer.execute(
        f"CREATE KEYSPACE {keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )


def change_schema(observer: Session, keyspace: str, seconds: float) -> int:
    """Create and drop tables for ``seconds``, as another pipeline on the cluster may:
    the server pushes a schema change event to every client's control connection."""
    end = time.monotonic() + seconds
    changes = 0
    while time.monotonic() < end:
        table = f"{keyspace}.t{changes}"
        observer.execute(f"CREATE TABLE {table} (k int PRIMARY KEY)")
        observer.execute(f"DROP TABLE {table}")
        changes += 2
    return changes


def source(contact_points: list[str], port: int = NATIVE_PORT) -> dict[str, Any]:
    return {"contact_points": contact_points, "port": port, "clock_source": "cql"}


async def one_client_costs(contact_points: list[str]) -> tuple[int, int]:
    """Connections and threads one client of the project adds, read once and closed."""
    from cdcgen.adapters.cql import connect

    before_connections, before_threads = connections(), threads()
    client = await asyncio.to_thread(connect, contact_points, NATIVE_PORT)
    try:
        await asyncio.to_thread(
            lambda: list(client.session.execute("SELECT now() FROM system.local"))
        )
        return len(connections() - before_connections), threads() - before_threads
    finally:
        await asyncio.to_thread(client.close)


def run_trigger(trigger: Any, after: float = 0.0) -> asyncio.Task[list[Any]]:
    """``trigger.run()`` as a task, started ``after`` seconds from now."""

    async def collect() -> list[Any]:
        await asyncio.sleep(after)
        return [event.payload async for event in trigger.run()]

    return asyncio.ensure_future(collect())


@pytest.mark.integration
def test_fifty_waiting_triggers_hold_one_client_and_read_as_one_poller(
    cassandra_single: CassandraHandle,
) -> None:
    from cdcgen.airflow.triggers import ClockPastTrigger

    observer = cassandra_single.session()
    points = list(cassandra_single.contact_points)
    keyspace = f"triggerer_schema_{os.getpid()}"
    fresh_keyspace(observer, keyspace)

    async def main() -> tuple[tuple[int, int], Sample, Sample, Sample, set[int], list[Any]]:
        one_client = await one_client_costs(points)
        baseline = await sample(observer)
        now = await asyncio.to_thread(
            lambda: observer.execute("SELECT totimestamp(now()) FROM system.local").one()[0]
        )
        # Past in about 10 s: the triggers wait through both samples below, however
        # long the last schema change of the 2 s between them takes.
        target = naive_as_utc(now) + timedelta(seconds=10.0)
        tasks = [
            run_trigger(
                ClockPastTrigger(
                    target_ms=to_millis(target),
                    source=source(points),
                    timeout_seconds=60,
                    subject=f"wait {i}",
                    poll_interval=INTERVAL,
                ),
                # Deferred one after the other, as a mapped sensor's tasks are: their
                # polls fall all over the interval, not in step.
                after=i * INTERVAL / WAITERS,
            )
            for i in range(WAITERS)
        ]
        await asyncio.sleep(1.0)  # every trigger deferred and polling
        first = await sample(observer)
        # Meanwhile another client changes the schema: the waits' client reads clocks
        # only, and must not reload the schema at each change.
        changes = await asyncio.to_thread(change_schema, observer, keyspace, 2.0)
        assert changes >= 2, changes
        assert not any(task.done() for task in tasks), "a wait ended before the sample"
        second = await sample(observer)
        events = await asyncio.gather(*tasks)
        await asyncio.sleep(0.2)  # the driver's sockets close as its threads stop
        return one_client, baseline, first, second, connections(), events

    try:
        (client_connections, client_threads), baseline, first, second, after, events = asyncio.run(
            main()
        )
    finally:
        observer.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
    assert [payload["status"] for (payload,) in events] == ["started"] * WAITERS

    # Connections and threads: those of one client, whatever the number of waits.
    for during in (first, second):
        opened = during.connections - baseline.connections
        assert len(opened) == client_connections, (len(opened), client_connections)
        assert during.threads <= baseline.threads + client_threads + EXECUTOR_THREADS, (
            during.threads,
            baseline.threads,
            client_threads,
        )
    # Readings: those of one poller every INTERVAL seconds (one request per node and
    # reading on the same connections), counted by the server.
    polling = (first.connections & second.connections) - baseline.connections
    served = sum(second.requests.get(p, 0) - first.requests.get(p, 0) for p in polling)
    window = second.at - first.at
    nodes = len(points)
    assert 0 < served <= nodes * (window / INTERVAL + 3), (served, window)
    # The last waiter gone, the client is closed.
    assert after <= baseline.connections, after - baseline.connections


@pytest.mark.integration
def test_a_client_without_schema_metadata_holds_none_and_still_knows_every_node(
    cassandra_single: CassandraHandle,
) -> None:
    """What the clock waits' client is opened with: no schema (not even the system
    keyspaces), no refresh on another client's schema change, the hosts all the same."""
    from cdcgen.adapters.clock_reader import CqlClockReader
    from cdcgen.adapters.cql import connect

    observer = cassandra_single.session()
    points = list(cassandra_single.contact_points)
    keyspace = f"triggerer_no_schema_{os.getpid()}"
    with_schema = connect(points)
    without = connect(points, schema_metadata=False)
    try:
        assert "system" in with_schema.cluster.metadata.keyspaces
        assert without.cluster.metadata.keyspaces == {}
        fresh_keyspace(observer, keyspace)
        deadline = time.monotonic() + 10.0  # the driver refreshes 0-2 s after the event
        while keyspace not in with_schema.cluster.metadata.keyspaces:
            assert time.monotonic() < deadline, "the schema change event never came"
            time.sleep(0.1)
        assert without.cluster.metadata.keyspaces == {}
        clocks = CqlClockReader(without).read_clocks()
        assert [c.node for c in clocks] == points and all(c.clock for c in clocks), clocks
    finally:
        with_schema.close()
        without.close()
        observer.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")


def test_a_refused_connection_reaches_every_waiting_trigger_as_transient() -> None:
    """Nothing listens on port 1: every wait goes on polling until its own timeout and
    names the cause; one shared connection attempt per interval, not one per waiter."""
    from cdcgen.airflow.triggers import ClockPastTrigger

    async def main() -> list[list[Any]]:
        tasks = [
            run_trigger(
                ClockPastTrigger(
                    target_ms=0,
                    source=source(["127.0.0.1"], port=1),
                    timeout_seconds=1.0 + i % 2,
                    subject=f"wait {i}",
                    poll_interval=INTERVAL,
                )
            )
            for i in range(20)
        ]
        return await asyncio.gather(*tasks)

    started = time.monotonic()
    events = asyncio.run(main())
    assert time.monotonic() - started < 10
    for (payload,) in events:
        assert payload["status"] == "timeout", payload
        assert "no CQL node answered at 127.0.0.1:1" in payload["message"]
        assert "ConnectionFailed" in payload["message"]
