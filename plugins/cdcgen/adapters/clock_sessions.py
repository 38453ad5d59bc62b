"""Clock readings a process shares per cluster: one client and one reading per poll
interval, however many waits there are.

The triggerer runs every deferred clock wait in one event loop. A wait that opened its
own driver ``Cluster`` brought its own threads, a control connection and a connection
per node, and read every node's clock each second: a backlog of mapped sensors
multiplied threads, sockets and CPU by the number of waits until the loop starved.
Waits on one cluster all ask the same question (what time is it on each node), so in
one process they share the answer:

* one :class:`ClockSession` per cluster, reference-counted: opened by the first waiter,
  closed once the last one leaves, reconnected on the reading after a failure. Its
  client reads clocks only, so it loads no schema and ignores the cluster's schema
  change events: else every table another client creates or drops would cost the
  triggerer a schema reload;
* single-flight: a waiter asking while a reading is in flight awaits that reading, and
  a reading (or a failure) younger than the waiter's poll interval is handed out again.
  An older reading can only understate the clocks, so a wait ends at most one interval
  later than with a poller of its own, never early; a failing cluster is retried once
  per interval, not once per waiter;
* a failed reading reaches every waiter that asked for it as the error it is (transient
  or terminal, as :mod:`cdcgen.adapters.errors` sorts it); each waiter keeps its own
  target, timeout and handling of it.

"One cluster" is one connection identity and one clock source: contact points, port,
protocol, credentials, TLS material and the reader's settings. Its key is an HMAC of
them under a key drawn once per process, so the key can be logged or shown without
giving the password away, and it means nothing outside the process.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cdcgen.adapters.cluster_access import ClusterAccess
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig
    from cdcgen.core.clocks import NodeClock
    from cdcgen.ports import ClockReader

_PROCESS_KEY = secrets.token_bytes(32)


class ClosableClockReader(Protocol):
    """A clock reader that holds a connection: what the shared poller drives (blocking)."""

    def read_clocks(self) -> list[NodeClock]: ...

    def close(self) -> None: ...


#: ``read(max_age)``: the clocks from the reading in flight, or one started less than
#: ``max_age`` seconds ago (the waiter's poll interval), else from a new reading.
ReadClocks = Callable[[float], Awaitable[list["NodeClock"]]]


class ClockSession:
    """A lazily (re)connected clock reader; every call blocks, so async callers use a
    thread. After a failed reading the connection is dropped and the next one reconnects:
    a node that restarted or a broken socket costs one interval, not the wait."""

    def __init__(self, config: PipelineConfig, access: ClusterAccess | None = None) -> None:
        self.config = config
        self._access = access
        self._client: CqlClient | None = None
        self._reader: ClockReader | None = None

    def read_clocks(self) -> list[NodeClock]:
        if self._reader is None:
            from cdcgen.adapters.clock_reader import clock_reader_for
            from cdcgen.adapters.cluster_access import access_for
            from cdcgen.adapters.cql import connect

            config = self.config
            access = self._access if self._access is not None else access_for(config)
            client = connect(
                config.contact_points,
                config.port,
                protocol_version=config.protocol_version,
                access=access,
                schema_metadata=False,
            )
            try:
                self._reader = clock_reader_for(client, config)
            except BaseException:
                client.close()  # else every later reading would leave one more Cluster open
                raise
            self._client = client
        try:
            return list(self._reader.read_clocks())
        except Exception:
            self.close()  # reconnect on the next reading
            raise

    def close(self) -> None:
        client, self._client, self._reader = self._client, None, None
        if client is not None:
            client.close()


def cluster_key(config: PipelineConfig, access: ClusterAccess) -> str:
    """The connection identity and clock source of ``config``, as an HMAC under this
    process's key (see the module doc): safe to log, useless to anyone else."""
    tls = access.tls
    identity = {
        "contact_points": list(config.contact_points),
        "port": config.port,
        "protocol_version": config.protocol_version,
        "clock_source": config.clock_source,
        "source_mode": str(config.source_mode),
        "source_keyspace_prefix": config.source_keyspace_prefix,
        "username": access.username,
        "password": access.password.get_secret_value() if access.password else None,
        "tls": None
        if tls is None
        else {
            "ca": tls.ca_pem,
            "cert": tls.cert_pem,
            "key": tls.key_pem.get_secret_value() if tls.key_pem else None,
            "verify_hostname": tls.verify_hostname,
        },
    }
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":")).encode()
    return hmac.new(_PROCESS_KEY, canonical, hashlib.sha256).hexdigest()


@dataclass(eq=False)
class _Poller:
    """One cluster's session, its latest reading (in flight or done) and its waiters."""

    session: ClosableClockReader
    monotonic: Callable[[], float]
    waiters: int = 0
    _latest: asyncio.Future[list[NodeClock]] | None = None
    _started: float = 0.0

    async def read(self, max_age: float) -> list[NodeClock]:
        latest = self._latest
        if latest is None or (latest.done() and self.monotonic() - self._started >= max_age):
            self._started = self.monotonic()
            latest = self._latest = asyncio.ensure_future(
                asyncio.to_thread(self.session.read_clocks)
            )
            # Retrieved even if every waiter was cancelled meanwhile (no "never retrieved").
            latest.add_done_callback(lambda done: done.cancelled() or done.exception())
        # Shielded: a waiter cancelled by the triggerer must not cancel the others' reading.
        return list(await asyncio.shield(latest))

    async def close(self) -> None:
        latest = self._latest
        if latest is not None and not latest.done():
            await asyncio.wait([latest])  # the session is not closed under a reading
        await asyncio.to_thread(self.session.close)


class SharedClocks:
    """The process's clock pollers, one per event loop and cluster key."""

    def __init__(
        self,
        open_session: Callable[[PipelineConfig, ClusterAccess], ClosableClockReader] = ClockSession,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._open_session = open_session
        self._monotonic = monotonic
        self._pollers: dict[tuple[asyncio.AbstractEventLoop, str], _Poller] = {}

    def pollers(self) -> int:
        """How many clusters have waiters now (in every event loop)."""
        return len(self._pollers)

    @asynccontextmanager
    async def use(self, config: PipelineConfig, access: ClusterAccess) -> AsyncIterator[ReadClocks]:
        """Join the waiters of ``config``'s cluster (``access``: what its session opens
        with); yields ``read(max_age)``: the reading in flight, else the latest one if it
        started less than ``max_age`` seconds ago, else a new one."""
        slot = (asyncio.get_running_loop(), cluster_key(config, access))
        poller = self._pollers.get(slot)
        if poller is None:
            poller = _Poller(self._open_session(config, access), self._monotonic)
            self._pollers[slot] = poller
        poller.waiters += 1
        try:
            yield poller.read
        finally:
            poller.waiters -= 1
            if poller.waiters == 0:
                if self._pollers.get(slot) is poller:
                    del self._pollers[slot]
                # The next waiter of this cluster, if any, opens a session of its own.
                await asyncio.shield(poller.close())


#: The one registry of the process (the triggerer's).
SHARED_CLOCKS = SharedClocks()


def read_clocks_once(config: PipelineConfig) -> list[NodeClock]:
    """One synchronous reading on a session of its own (a sensor's first check, ``poke``)."""
    session = ClockSession(config)
    try:
        return session.read_clocks()
    finally:
        session.close()


__all__ = [
    "SHARED_CLOCKS",
    "ClockSession",
    "ClosableClockReader",
    "ReadClocks",
    "SharedClocks",
    "cluster_key",
    "read_clocks_once",
]
