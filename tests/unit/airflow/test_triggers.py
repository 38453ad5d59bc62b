"""The generations watcher's trigger: what it stores, and its poll loop over in-memory
ports (an event per new unpublished generation, none for a published one, polling on
through failures). Against the real Cassandra: ``tests/integration/test_generation_watch.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cdcgen.adapters import watch_sessions
from cdcgen.adapters.cluster_access import ClusterAccess
from cdcgen.adapters.errors import ConnectionFailed
from cdcgen.adapters.generation_sources import GenerationPorts
from cdcgen.adapters.watch_sessions import SharedWatchSessions, WatchSession
from cdcgen.airflow.connections import env_var_name, source_connection
from cdcgen.airflow.triggers import COMMITTED, GenerationCommittedTrigger
from cdcgen.config import PipelineConfig
from cdcgen.core.generation import Generation
from unit.generation_fakes import FakePublisher, FakeSource, rows_for

T0 = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
GENS = [Generation(T0 + timedelta(minutes=10 * i), f"gen-{i}") for i in range(3)]


def test_serialize_round_trip_keeps_the_connection_id_only_and_a_stable_hash() -> None:
    from airflow.sdk._shared.module_loading import import_string
    from airflow.sdk.serde import deserialize, serialize
    from airflow.triggers.base import BaseEventTrigger

    trigger = GenerationCommittedTrigger(conn_id="east", target_keyspace="tk", poll_interval=2)
    classpath, kwargs = trigger.serialize()
    assert classpath == "cdcgen.airflow.triggers.GenerationCommittedTrigger"
    assert kwargs == {"conn_id": "east", "target_keyspace": "tk", "poll_interval": 2.0}
    rebuilt = import_string(classpath)(**deserialize(serialize(kwargs)))
    assert isinstance(rebuilt, BaseEventTrigger)  # what AssetWatcher accepts
    assert rebuilt.serialize() == (classpath, kwargs)
    # Airflow keys a watcher by this hash: a second parse must not restart it.
    again = GenerationCommittedTrigger(conn_id="east", target_keyspace="tk", poll_interval=2)
    assert BaseEventTrigger.hash(*again.serialize()) == BaseEventTrigger.hash(classpath, kwargs)


class Cluster:
    """What the in-memory session serves: committed generations, the published ones,
    and failures to raise on the next polls."""

    def __init__(self) -> None:
        self.source = FakeSource()
        self.publisher = FakePublisher()
        self.failures: list[BaseException] = []
        self.polls = 0


def in_memory(cluster: Cluster) -> SharedWatchSessions:
    class Session(WatchSession):
        def use(self, work: Any) -> Any:
            cluster.polls += 1
            if cluster.failures:
                raise cluster.failures.pop(0)
            return work(GenerationPorts(cluster.source, cluster.publisher))

    def open_session(config: PipelineConfig, access: ClusterAccess) -> WatchSession:
        return Session(config, access)

    return SharedWatchSessions(open_session)


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Cluster:
    monkeypatch.setenv(env_var_name("watched"), json.dumps(source_connection()))
    world = Cluster()
    monkeypatch.setattr(watch_sessions, "SHARED_WATCH_SESSIONS", in_memory(world))
    return world


async def events(trigger: GenerationCommittedTrigger, until: Any) -> list[dict[str, Any]]:
    """The trigger's events while it polls, until ``until()`` says so (then cancelled)."""
    got: list[dict[str, Any]] = []

    async def consume() -> None:
        async for event in trigger.run():
            got.append(event.payload)

    task = asyncio.create_task(consume())
    for _ in range(500):
        await asyncio.sleep(0.01)
        if until():
            break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return got


def ids(payload: dict[str, Any]) -> Sequence[str]:
    return [g["id"] for g in payload["generations"]]


def test_an_event_per_new_unpublished_generation_none_for_a_published_one(
    cluster: Cluster,
) -> None:
    cluster.source.committed = [GENS[0], GENS[1]]
    cluster.publisher.publish(GENS[0], rows_for(GENS[0]))
    trigger = GenerationCommittedTrigger(conn_id="watched", poll_interval=0.01)

    def commit_later() -> bool:
        if cluster.polls == 5:
            cluster.source.committed.append(GENS[2])
        return cluster.polls >= 10

    got = asyncio.run(events(trigger, commit_later))
    assert [ids(p) for p in got] == [["gen-1"], ["gen-2"]]
    assert all(p["status"] == COMMITTED and p["cluster"] == "watched" for p in got)


def test_polling_goes_on_through_failures(cluster: Cluster) -> None:
    cluster.source.committed = [GENS[0]]
    cluster.failures = [ConnectionFailed("no CQL node answered")] * 3
    trigger = GenerationCommittedTrigger(conn_id="watched", poll_interval=0.01)
    got = asyncio.run(events(trigger, lambda: cluster.polls >= 6))
    assert [ids(p) for p in got] == [["gen-0"]]


def test_a_clock_reader_s_settings_are_json_with_no_secret_and_rebuild_its_config(
    tmp_path: Any,
) -> None:
    """What the clock wait stores in the trigger's kwargs, in the order it always had."""
    from cdcgen.airflow.triggers import clock_settings, config_from_clock_settings

    ca = tmp_path / "ca.pem"
    config = PipelineConfig(
        contact_points=("10.0.0.1", "10.0.0.2"),
        protocol_version=4,
        username="ops_user",
        password="s3cret-pw",
        tls_ca_file=ca,
    )
    settings = clock_settings(config, "east")
    assert list(settings.items()) == [
        ("contact_points", ["10.0.0.1", "10.0.0.2"]),
        ("port", 9042),
        ("protocol_version", 4),
        ("source_mode", "raft"),
        ("source_keyspace_prefix", ""),
        ("clock_source", "cql"),
        ("tls", True),
        ("tls_ca_file", str(ca)),
        ("tls_verify_hostname", True),
        ("conn_id", "east"),
    ]
    assert "s3cret-pw" not in json.dumps(settings) and "ops_user" not in json.dumps(settings)
    rebuilt = config_from_clock_settings(settings, login="ops_user", password="s3cret-pw")
    assert clock_settings(rebuilt, "east") == settings
    assert rebuilt.access.username == "ops_user"
