"""Watchers of one cluster share one session; it is closed when the last one leaves, and a
failed poll drops its connection so the next poll reconnects.

Driven with in-memory ports (the session's own connect step replaced); the real driver
and Cassandra are in ``tests/integration/test_generation_watch.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cdcgen.adapters.cluster_access import ClusterAccess, access_for
from cdcgen.adapters.errors import ConnectionFailed
from cdcgen.adapters.generation_sources import GenerationPorts
from cdcgen.adapters.watch_sessions import SharedWatchSessions, WatchSession, watch_key
from cdcgen.config import PipelineConfig
from unit.generation_fakes import FakePublisher, FakeSource


def config(**overrides: Any) -> PipelineConfig:
    return PipelineConfig.from_env({}).with_overrides(**overrides)


class InMemorySession(WatchSession):
    """A session whose connect step builds in-memory ports and counts itself."""

    def __init__(self, config: PipelineConfig, access: ClusterAccess | None = None) -> None:
        super().__init__(config, access)
        self.connects = 0
        self.closed = 0

    def _connect(self) -> None:
        self.connects += 1
        self._ports = GenerationPorts(FakeSource(), FakePublisher())

    def _close(self) -> None:
        if self._ports is not None:
            self.closed += 1
        self._ports = None


def test_a_failed_poll_drops_the_connection_and_the_next_one_reconnects() -> None:
    session = InMemorySession(config())

    def fail(_ports: GenerationPorts) -> None:
        raise ConnectionFailed("no CQL node answered")

    assert session.use(lambda ports: ports.source.list_generations()) == []
    with pytest.raises(ConnectionFailed):
        session.use(fail)
    assert (session.connects, session.closed) == (1, 1)
    session.use(lambda ports: None)
    assert session.connects == 2


def test_watchers_of_one_cluster_share_a_session_until_the_last_leaves() -> None:
    opened: list[InMemorySession] = []

    def open_session(cfg: PipelineConfig, access: ClusterAccess) -> WatchSession:
        opened.append(InMemorySession(cfg, access))
        return opened[-1]

    shared = SharedWatchSessions(open_session)
    east = config(contact_points=("10.0.0.1",))
    west = config(contact_points=("10.0.0.2",))

    async def scenario() -> None:
        async with shared.use(east, access_for(east)) as first:
            async with shared.use(east, access_for(east)) as second:
                await first(lambda ports: None)
                await second(lambda ports: None)
                async with shared.use(west, access_for(west)) as third:
                    await third(lambda ports: None)
                    assert shared.sessions() == 2
            assert shared.sessions() == 1
            assert opened[0].closed == 0  # one watcher still uses it
        assert shared.sessions() == 0
        assert [s.closed for s in opened] == [1, 1]

    asyncio.run(scenario())
    assert len(opened) == 2 and opened[0].connects == 1  # two watchers, one connection


def test_another_target_keyspace_is_another_session() -> None:
    one, other = config(), config(target_keyspace="other_target")
    assert watch_key(one, access_for(one)) != watch_key(other, access_for(other))
    assert watch_key(one, access_for(one)) == watch_key(config(), access_for(config()))
