"""The generation ports a process's watchers share per cluster: one client, kept open.

The generations DAG's watcher (:class:`cdcgen.airflow.triggers.GenerationCommittedTrigger`)
polls the source's generation metadata every few seconds for as long as the triggerer
runs. Opening a driver ``Cluster`` per poll would cost a control connection, a
connection per node and the schema read each time; one per watcher would multiply them
by the DAGs built on one cluster. So, as the clock waits do
(:mod:`cdcgen.adapters.clock_sessions`):

* one :class:`WatchSession` per cluster and publication target, reference-counted:
  opened by the first watcher, closed once the last one leaves;
* the client is opened on the first poll and dropped after a failed one, so a node
  that restarted or a broken socket costs one interval, not the watch; the next poll
  reconnects;
* polls run in a thread (the driver blocks) one at a time per session: the sources keep
  what they have seen (a gossip cluster shows only its current generation), and two
  watchers must not update that at once.

"One cluster" is the clock sessions' connection identity
(:func:`~cdcgen.adapters.clock_sessions.cluster_key`) plus what the ports read beyond
it: the target keyspace the publisher reads and, in tablets mode, the tables followed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from cdcgen.adapters.clock_sessions import cluster_key

if TYPE_CHECKING:
    from cdcgen.adapters.cluster_access import ClusterAccess
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.adapters.generation_sources import GenerationPorts
    from cdcgen.config import PipelineConfig

T = TypeVar("T")


class Poll(Protocol):
    """``poll(work)``: ``work(ports)`` run in a thread on the cluster's shared ports."""

    def __call__(self, work: Callable[[GenerationPorts], T]) -> Awaitable[T]: ...


class WatchSession:
    """A lazily (re)connected client and the generation ports over it; every call
    blocks and holds the session's lock."""

    def __init__(self, config: PipelineConfig, access: ClusterAccess | None = None) -> None:
        self.config = config
        self._access = access
        self._lock = threading.Lock()
        self._client: CqlClient | None = None
        self._ports: GenerationPorts | None = None

    def use(self, work: Callable[[GenerationPorts], T]) -> T:
        """``work(ports)``, connecting first if need be; a failure drops the connection
        (the next call reconnects) and is raised as it is."""
        with self._lock:
            if self._ports is None:
                self._connect()
            assert self._ports is not None
            try:
                return work(self._ports)
            except Exception:
                self._close()
                raise

    def _connect(self) -> None:
        from cdcgen.adapters.cluster_access import access_for
        from cdcgen.adapters.cql import connect
        from cdcgen.adapters.generation_sources import generation_ports

        config = self.config
        client = connect(
            config.contact_points,
            config.port,
            protocol_version=config.protocol_version,
            access=self._access if self._access is not None else access_for(config),
        )
        try:
            self._ports = generation_ports(client, config)
        except BaseException:
            client.close()
            raise
        self._client = client

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        client, self._client, self._ports = self._client, None, None
        if client is not None:
            client.close()


def watch_key(config: PipelineConfig, access: ClusterAccess) -> str:
    """The cluster's :func:`cluster_key`, and what the ports read beyond the connection."""
    tables = config.extra.get("cdc_tables", "")
    return f"{cluster_key(config, access)}/{config.target_keyspace}/{tables}"


@dataclass(eq=False)
class _Shared:
    session: WatchSession
    watchers: int = 0


class SharedWatchSessions:
    """The process's watch sessions, one per event loop and :func:`watch_key`."""

    def __init__(
        self,
        open_session: Callable[[PipelineConfig, ClusterAccess], WatchSession] = WatchSession,
    ) -> None:
        self._open_session = open_session
        self._sessions: dict[tuple[asyncio.AbstractEventLoop, str], _Shared] = {}

    def sessions(self) -> int:
        """How many sessions are open now (in every event loop)."""
        return len(self._sessions)

    @asynccontextmanager
    async def use(self, config: PipelineConfig, access: ClusterAccess) -> AsyncIterator[Poll]:
        """Join the watchers of ``config``'s cluster; yields ``poll(work)``, which runs
        ``work(ports)`` in a thread on the shared session."""
        slot = (asyncio.get_running_loop(), watch_key(config, access))
        shared = self._sessions.get(slot)
        if shared is None:
            shared = self._sessions[slot] = _Shared(self._open_session(config, access))
        shared.watchers += 1
        session = shared.session

        async def poll(work: Callable[[GenerationPorts], T]) -> T:
            return await asyncio.to_thread(session.use, work)

        try:
            yield poll
        finally:
            shared.watchers -= 1
            if shared.watchers == 0:
                if self._sessions.get(slot) is shared:
                    del self._sessions[slot]
                await asyncio.shield(asyncio.to_thread(session.close))


#: The one registry of the process (the triggerer's).
SHARED_WATCH_SESSIONS = SharedWatchSessions()


__all__ = ["SHARED_WATCH_SESSIONS", "Poll", "SharedWatchSessions", "WatchSession", "watch_key"]
