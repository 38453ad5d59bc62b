"""The generations watcher's trigger against the real Cassandra, in every source mode.

``GenerationCommittedTrigger.run()`` runs in an asyncio loop as the triggerer runs it,
reading its connection from an ``AIRFLOW_CONN_*`` variable through the real hook and the
real driver. The emulator commits a generation (a node joins; in tablets mode the
table's tablets split) while it polls: the event must come within seconds and name that
generation; a generation already published must make none, before or after.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from cdcgen.adapters.cql import CqlClient
from cdcgen.adapters.generation_sources import generation_ports
from cdcgen.adapters.publisher import rows_of
from cdcgen.adapters.watch_sessions import SHARED_WATCH_SESSIONS
from cdcgen.airflow.connections import env_var_name, source_connection_for
from cdcgen.airflow.triggers import COMMITTED, GenerationCommittedTrigger
from cdcgen.config import PipelineConfig
from cdcgen.core.generation import SourceMode
from cdcgen.core.time import to_millis
from cdcgen.schema import SourceSchema
from cdcgen_dev.emulator import SandboxCluster, create_cdc_table, orders_table, split_tablets
from cdcgen_dev.emulator.schema_setup import ddl, drop_keyspaces
from cdcgen_dev.emulator.tablets import tablet_stream_sets
from cdcgen_dev.sandbox import sandbox_config

pytestmark = pytest.mark.integration

CONN_ID = "watched_source"
POLL = 0.5
#: How long a poll loop is watched for an event that must not come (several polls).
QUIET = 8 * POLL
#: The new generation's event must come within this long of its commit.
WITHIN = 10.0


@pytest.fixture
def sandbox(client: CqlClient, request: pytest.FixtureRequest) -> Iterator[SandboxCluster]:
    mode = request.node.callspec.params["mode"]
    schema = SourceSchema(f"t_watch_{mode}_")

    def clean() -> None:
        drop_keyspaces(client, schema)
        ddl(client, f"DROP KEYSPACE IF EXISTS {schema.keyspace_prefix}ks")

    clean()
    yield SandboxCluster(client, schema)


def commit(sandbox: SandboxCluster, mode: SourceMode, step: int) -> datetime:
    """Commit the ``step``-th generation of ``mode``; returns its timestamp."""
    keyspace = f"{sandbox.schema.keyspace_prefix}ks"
    if mode is SourceMode.TABLETS:
        if step == 1:
            sandbox.join_node(mode, vnodes=4, seed=70)
            create_cdc_table(sandbox, orders_table(keyspace), tablets=2, seed=71)
            return tablet_stream_sets(sandbox, keyspace, "orders")[0].timestamp
        return split_tablets(sandbox, keyspace, "orders", seed=70 + step).timestamp
    joined = sandbox.join_node(mode, vnodes=8, seed=70 + step)
    assert joined.generation is not None
    return joined.generation.timestamp


def config_for(sandbox: SandboxCluster, mode: SourceMode, target: str) -> PipelineConfig:
    extra = {"cdc_tables": f"{sandbox.schema.keyspace_prefix}ks.orders"}
    return sandbox_config(
        sandbox.schema.keyspace_prefix,
        contact_points=("127.0.0.1",),
        source_mode=mode,
        target_keyspace=target,
        extra=extra if mode is SourceMode.TABLETS else {},
    )


async def watch(
    trigger: GenerationCommittedTrigger, sandbox: SandboxCluster, mode: SourceMode
) -> tuple[list[dict[str, Any]], datetime, float]:
    """Polls quietly, commits a generation, waits for its event and for none after it.

    Returns every event, the new generation's timestamp and the seconds from its commit
    to its event.
    """
    events: asyncio.Queue[tuple[float, dict[str, Any]]] = asyncio.Queue()

    async def consume() -> None:
        async for event in trigger.run():
            await events.put((time.monotonic(), event.payload))

    task = asyncio.create_task(consume())
    got: list[dict[str, Any]] = []
    try:
        with pytest.raises(TimeoutError):  # the published generation: no event
            got.append((await asyncio.wait_for(events.get(), QUIET))[1])
        assert SHARED_WATCH_SESSIONS.sessions() == 1  # it was polling all along
        timestamp = await asyncio.to_thread(commit, sandbox, mode, 2)
        committed = time.monotonic()
        arrived, payload = await asyncio.wait_for(events.get(), WITHIN)
        got.append(payload)
        with pytest.raises(TimeoutError):  # announced once, though still unpublished
            got.append((await asyncio.wait_for(events.get(), QUIET))[1])
        return got, timestamp, arrived - committed
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize("mode", list(SourceMode), ids=str)
def test_a_committed_generation_makes_one_event_naming_it_a_published_one_none(
    mode: SourceMode,
    sandbox: SandboxCluster,
    client: CqlClient,
    target_keyspace: str,
    monkeypatch: pytest.MonkeyPatch,
    record_property: Any,
) -> None:
    config = config_for(sandbox, mode, target_keyspace)
    commit(sandbox, mode, 1)
    ports = generation_ports(client, config)
    (first,) = ports.source.list_generations()
    ports.publisher.publish(first, rows_of(ports.source.read_description(first)))
    assert ports.publisher.published_among([first]) == {first}

    connection = source_connection_for(config, **dict(config.extra))
    monkeypatch.setenv(env_var_name(CONN_ID), json.dumps(connection))
    trigger = GenerationCommittedTrigger(
        conn_id=CONN_ID, target_keyspace=target_keyspace, poll_interval=POLL
    )
    events, timestamp, delay = asyncio.run(watch(trigger, sandbox, mode))

    assert len(events) == 1, events
    (event,) = events
    assert event["status"] == COMMITTED and event["cluster"] == CONN_ID
    (named,) = event["generations"]
    assert named["ts_ms"] == to_millis(timestamp) != first.ms
    assert named["table"] == (f"{sandbox.schema.keyspace_prefix}ks.orders" if first.table else None)
    assert delay < WITHIN
    record_property("commit_to_event_seconds", round(delay, 3))
    assert SHARED_WATCH_SESSIONS.sessions() == 0  # the watcher's session closed with it
