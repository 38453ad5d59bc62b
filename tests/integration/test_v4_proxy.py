"""cassandra-driver against the v4-only endpoint in front of the sandbox's Cassandra.

The seconds-long check of what the e2e runs (tests/e2e/test_v4_endpoint.py) rely on: the
driver, left to negotiate, is refused on DSE v2, DSE v1 and v5 with ScyllaDB's error and
settles on v4; pages, prepared statements and a held-back response behave as on
ScyllaDB, and the connection survives the late answer.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from cdcgen_dev.cassandra.v4_proxy import Delay, V4Proxy

pytestmark = pytest.mark.integration


@pytest.fixture
def proxy(cassandra_single: Any) -> Iterator[V4Proxy]:
    with V4Proxy(upstream=(cassandra_single.contact_points[0], cassandra_single.port)) as p:
        p.check_single_node()
        p.reset()
        yield p


def test_the_driver_negotiates_v4_and_pages_prepares_and_times_out(proxy: V4Proxy) -> None:
    from cassandra import OperationTimedOut
    from cassandra.cluster import Cluster
    from cassandra.query import SimpleStatement

    cluster = Cluster([proxy.host], port=proxy.port)
    try:
        session = cluster.connect()
        assert cluster.protocol_version == 4
        scan = SimpleStatement("SELECT table_name FROM system_schema.tables", fetch_size=10)
        assert len(list(session.execute(scan))) > 10  # more than one page
        local = session.prepare("SELECT release_version FROM system.local WHERE key = ?")
        proxy.delay(Delay("release_version FROM system.local", seconds=2.5))
        started = time.monotonic()
        with pytest.raises(OperationTimedOut):
            session.execute(local, ["local"], timeout=0.5)
        assert time.monotonic() - started < 2.5
        time.sleep(2.5)  # the late answer arrives and releases its stream id
        assert session.execute(local, ["local"], timeout=5).one() is not None
    finally:
        cluster.shutdown()
    stats = proxy.stats()
    assert dict(stats.refused) == {66: 1, 65: 1, 5: 1}
    assert stats.request_versions == {4}
    assert stats.paged_requests >= 1 and stats.partial_pages >= 1
    assert stats.count("PREPARE") == 1 and stats.executes == 2 and stats.delayed == 1


def test_a_connect_waits_out_a_slow_schema_read(proxy: V4Proxy) -> None:
    """A busy node answering the control connection's schema read in 4 s: the driver's
    own 2 s for it would fail the connect with ``OperationTimedOut`` (as a loaded CI node
    once did); the client gives it the connect timeout instead."""
    from cdcgen.adapters.cql import CONNECT_TIMEOUT, connect

    held = 4.0
    assert 2.0 < held < CONNECT_TIMEOUT
    proxy.delay(Delay("FROM system_schema.keyspaces", seconds=held))
    client = connect([proxy.host], proxy.port)
    try:
        assert client.session.execute("SELECT key FROM system.local").one() is not None
    finally:
        client.close()
    assert proxy.stats().delayed == 1
