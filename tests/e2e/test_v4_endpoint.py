"""Both DAGs through an endpoint that speaks protocol v4 only, the way ScyllaDB does.

ScyllaDB serves v3 and v4 and answers anything newer with a protocol error; the sandbox's
Cassandra 5 would happily serve v5. Here the source connection points at the v4-only
proxy (:mod:`cdcgen_dev.cassandra.v4_proxy`) in front of the sandbox, so every session
of a run (the tasks, the trigger, the Spark driver and its Python workers) meets
ScyllaDB's refusal first and has to negotiate down. The proxy counts what it served:

* ``cdc_generations`` publishes the generation; the proxy refused the newer versions
  (the driver tried them first) and forwarded nothing but v4;
* ``cdc_changes`` reads the log on v4 with prepared statements and pages smaller than
  a stream's rows, and two of its page requests are held past the request timeout (a
  slow replica): the reads are retried, the run passes, and every row is in the lake.

The emulated cluster is one node, so ``system.peers`` is empty and the driver knows no
address but the proxy's (checked: :meth:`V4Proxy.check_single_node`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from dag_scenarios import Scenario, assert_ok

from cdcgen.core.generation import SourceMode
from cdcgen_dev.cassandra.v4_proxy import Delay, ProxyStats, V4Proxy

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(1200)]

KEYSPACE = "e2e_v4_shop"
TABLE = f"{KEYSPACE}.orders"
PAGE_SIZE = 4
REQUEST_TIMEOUT = 2.0
#: Versions cassandra-driver tries before v4 when it negotiates (the beta v6 is skipped).
NEWER = {66, 65, 5}


@pytest.fixture
def proxy(cassandra_points: tuple[tuple[str, ...], int]) -> Iterator[V4Proxy]:
    (host, *_), port = cassandra_points
    with V4Proxy(upstream=(host, port)) as running:
        running.check_single_node()
        yield running


def assert_only_v4(stats: ProxyStats) -> None:
    assert stats.refused.keys() >= NEWER, stats.refused
    assert stats.upstream_connections > 0
    assert stats.request_versions == {4}, stats.requests
    assert {version for version, _ in stats.responses} == {4}, stats.responses


def test_both_dags_run_on_protocol_v4(
    scenario: Callable[[str, SourceMode], Scenario], proxy: V4Proxy
) -> None:
    from cdcgen_dev.emulator import WorkloadSpec, create_cdc_table, orders_table, run_workload

    direct = scenario("v4", SourceMode.RAFT)
    with direct.client() as client:  # the set-up goes straight to Cassandra
        client.session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}", timeout=120)
        cluster = direct.cluster(client)
        joined = cluster.join_node(SourceMode.RAFT, shards=2, vnodes=2, seed=41)
        create_cdc_table(cluster, orders_table(KEYSPACE))
        assert joined.generation is not None
        time.sleep(max((joined.generation.timestamp - datetime.now(UTC)).total_seconds(), 0))
        spec = WorkloadSpec(keyspace=KEYSPACE, rate=60, duration=timedelta(seconds=2), keys=6)
        run_workload(cluster, spec)
        source_rows = client.session.execute(
            f"SELECT COUNT(*) FROM {KEYSPACE}.orders_scylla_cdc_log", timeout=60
        ).one()[0]
    assert source_rows > PAGE_SIZE * 4
    through = Scenario(
        "v4",
        direct.config.with_overrides(contact_points=(proxy.host,), port=proxy.port),
        direct.home,
    )

    proxy.reset()
    run, summary = through.run()
    assert_ok(run)
    assert summary["generations_published"] == 1 and summary["validation"] == "passed"
    assert_only_v4(proxy.stats())

    proxy.reset()
    proxy.delay(Delay("orders_scylla_cdc_log WHERE", seconds=REQUEST_TIMEOUT + 3, count=2))
    run, summary = through.run_dag(
        "cdc_changes",
        conf={"tables": TABLE},
        extra={"confidence_window_seconds": 1},
        env={
            "CDCGEN_CHANGES_PAGE_SIZE": str(PAGE_SIZE),
            "CDCGEN_CHANGES_REQUEST_TIMEOUT_SECONDS": str(REQUEST_TIMEOUT),
            "CDCGEN_CHANGES_BACKOFF_MAX_SECONDS": "1",
        },
        summaries=through.config.report_dir / "summaries" / "changes",
    )
    assert_ok(run)
    table = summary["tables"][TABLE]
    assert table["status"] == "done" and table["rows"] == source_rows, table
    stats = proxy.stats()
    assert_only_v4(stats)
    assert stats.count("PREPARE") >= 1 and stats.executes >= 1  # prepared statements
    assert stats.partial_pages >= 1 and stats.paged_requests >= 1  # pages of PAGE_SIZE rows
    assert stats.delayed == 2
    # The two held-back pages timed out on the client and were asked for again, alone.
    assert run.output.count("OperationTimedOut; retrying in") == 2, run.tail(80)
