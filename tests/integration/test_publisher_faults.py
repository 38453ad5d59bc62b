"""A publisher process killed (SIGKILL: no cleanup, no except block) on a three-node
cluster with RF 3: mid-way through the streams rows, and between the last streams row
and the timestamp row. No reader at QUORUM ever sees the timestamp before every streams
row, and a re-run completes the generation with exactly the rows of an unbroken one."""

from __future__ import annotations

import multiprocessing
import signal
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sample_generations import WHEN, generation

from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.publisher import CqlDescriptionPublisher, rows_of
from cdcgen.schema import create_keyspace_cql

pytestmark = [pytest.mark.integration, pytest.mark.cluster]


def _publish_then_die(points: list[str], port: int, keyspace: str, where: str) -> None:
    """Runs in its own process: publish, and SIGKILL itself at ``where``."""
    import os

    from cdcgen.adapters import writes

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    if where == "mid-streams":
        run_all = writes.IdempotentWriter._execute_all

        def half(self: Any, statements: Any) -> None:
            run_all(self, statements[: len(statements) // 2])
            die()

        writes.IdempotentWriter._execute_all = half  # type: ignore[method-assign]
    else:
        CqlDescriptionPublisher.write_timestamp = lambda self, timestamp: die()  # type: ignore[method-assign]
    client = connect(points, port)
    CqlDescriptionPublisher(client, keyspace=keyspace).publish(WHEN, generation())
    raise AssertionError("published without dying")


@pytest.fixture
def cluster_client(cassandra_cluster3: Any) -> Iterator[tuple[CqlClient, Any]]:
    client = connect(sorted(cassandra_cluster3.contact_points), cassandra_cluster3.port)
    yield client, cassandra_cluster3
    client.close()


def _streams(client: CqlClient, keyspace: str) -> dict[int, frozenset[bytes]]:
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    query = SimpleStatement(
        f"SELECT range_end, streams FROM {keyspace}.cdc_streams_descriptions_v2 WHERE time = %s",
        consistency_level=ConsistencyLevel.QUORUM,
    )
    return {r.range_end: frozenset(r.streams) for r in client.session.execute(query, (WHEN,))}


@pytest.mark.parametrize("where", ["mid-streams", "before-timestamp"])
def test_a_killed_publisher_publishes_nothing_until_a_rerun_completes_it(
    cluster_client: tuple[CqlClient, Any], where: str
) -> None:
    client, cluster = cluster_client
    keyspace = f"kill_{uuid.uuid4().hex[:8]}"
    replication = {"class": "SimpleStrategy", "replication_factor": 3}
    client.session.execute(create_keyspace_cql(keyspace, replication), timeout=60)
    publisher = CqlDescriptionPublisher(client, keyspace=keyspace)
    publisher.ensure_tables()
    expected = {end: frozenset(streams) for end, streams in rows_of(generation())}
    try:
        process = multiprocessing.get_context("spawn").Process(
            target=_publish_then_die,
            args=(sorted(cluster.contact_points), cluster.port, keyspace, where),
        )
        process.start()
        process.join(300)
        assert process.exitcode == -signal.SIGKILL
        assert not publisher.is_published(WHEN)  # read at QUORUM
        left = _streams(client, keyspace)
        if where == "mid-streams":
            assert 0 < len(left) < len(expected)
        else:
            assert left == expected
        # The re-run, watched by a reader polling at QUORUM: whenever the timestamp
        # is there, every streams row is too.
        seen: list[int] = []
        done = threading.Event()

        def reader() -> None:
            while not done.is_set():
                if publisher.is_published(WHEN):
                    seen.append(len(_streams(client, keyspace)))

        watcher = threading.Thread(target=reader)
        watcher.start()
        try:
            assert CqlDescriptionPublisher(client, keyspace=keyspace).publish(WHEN, generation())
        finally:
            done.set()
            watcher.join(60)
        assert publisher.is_published(WHEN)
        assert _streams(client, keyspace) == expected
        assert set(seen) <= {len(expected)}
    finally:
        client.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=60)
