"""Clock readings shared per cluster in one process: one session, one reading per poll
interval, each waiter still told of every failure.

Driven with in-memory sessions (the shared poller's own port); the real driver and
Cassandra are in ``tests/e2e/test_triggerer_sessions.py``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from cdcgen.adapters.clock_sessions import SharedClocks, cluster_key
from cdcgen.adapters.cluster_access import ClusterAccess, access_for
from cdcgen.adapters.errors import ConnectionFailed, is_transient
from cdcgen.config import PipelineConfig
from cdcgen.core.clocks import NodeClock

SECRET = "s3cret-Pa55"
CLOCK = [NodeClock("a", datetime(2026, 11, 27, tzinfo=UTC))]


class FakeSession:
    """A cluster whose clock reading takes ``delay`` seconds (in the reading thread) and
    then returns CLOCK or raises the next scripted error."""

    def __init__(self, delay: float = 0.05, errors: list[Exception] | None = None) -> None:
        self.delay = delay
        self.errors = list(errors or [])
        self.reads = 0
        self.closed = 0
        self.concurrent = 0
        self.most_concurrent = 0
        self._lock = threading.Lock()

    def read_clocks(self) -> list[NodeClock]:
        with self._lock:
            self.reads += 1
            self.concurrent += 1
            self.most_concurrent = max(self.most_concurrent, self.concurrent)
        try:
            time.sleep(self.delay)
            if self.errors:
                raise self.errors.pop(0)
            return list(CLOCK)
        finally:
            with self._lock:
                self.concurrent -= 1

    def close(self) -> None:
        self.closed += 1


class Sessions:
    """The factory :class:`SharedClocks` opens sessions with; keeps every one it opened."""

    def __init__(self, **session: Any) -> None:
        self.session = session
        self.opened: list[FakeSession] = []

    def __call__(self, config: PipelineConfig, access: ClusterAccess) -> FakeSession:
        self.opened.append(FakeSession(**self.session))
        return self.opened[-1]


def config(**settings: Any) -> PipelineConfig:
    return PipelineConfig.validated({"contact_points": "10.0.0.1,10.0.0.2", **settings})


async def gather_reads(
    shared: SharedClocks, waiters: int, rounds: int, interval: float, cfg: PipelineConfig
) -> list[list[NodeClock] | BaseException]:
    """``waiters`` concurrent waiters each reading ``rounds`` times, ``interval`` apart."""

    async def waiter(index: int) -> list[list[NodeClock] | BaseException]:
        seen: list[list[NodeClock] | BaseException] = []
        await asyncio.sleep(index * interval / waiters)  # staggered, as deferrals arrive
        async with shared.use(cfg, access_for(cfg)) as read:
            for _ in range(rounds):
                try:
                    seen.append(await read(interval))
                except Exception as exc:
                    seen.append(exc)
                await asyncio.sleep(interval)
        return seen

    results = await asyncio.gather(*(waiter(i) for i in range(waiters)))
    return [item for seen in results for item in seen]


def test_concurrent_waiters_share_one_session_and_one_reading_per_interval() -> None:
    sessions = Sessions(delay=0.02)
    shared = SharedClocks(sessions)
    seen = asyncio.run(gather_reads(shared, waiters=40, rounds=5, interval=0.1, cfg=config()))
    assert seen == [CLOCK] * 200
    assert len(sessions.opened) == 1
    session = sessions.opened[0]
    # 40 waiters over about 0.6 s: the readings of one poller every 0.1 s, never two at once.
    assert session.reads <= 0.7 / 0.1 + 2, session.reads
    assert session.most_concurrent == 1
    assert session.closed == 1 and shared.pollers() == 0


def test_waiters_asking_during_a_reading_await_that_reading() -> None:
    sessions = Sessions(delay=0.2)
    shared = SharedClocks(sessions)
    cfg = config()

    async def main() -> list[list[NodeClock]]:
        async with shared.use(cfg, access_for(cfg)) as read:
            # max_age 0: any finished reading is too old, so only single-flight shares.
            return await asyncio.gather(*(read(0.0) for _ in range(30)))

    assert asyncio.run(main()) == [CLOCK] * 30
    assert sessions.opened[0].reads == 1


def test_a_failed_reading_reaches_every_waiter_and_is_retried_once_per_interval() -> None:
    failure = ConnectionFailed("no CQL node answered at 10.0.0.1:9042")
    sessions = Sessions(delay=0.05, errors=[failure, failure])
    shared = SharedClocks(sessions)
    seen = asyncio.run(gather_reads(shared, waiters=25, rounds=6, interval=0.1, cfg=config()))
    errors = [item for item in seen if isinstance(item, BaseException)]
    # Every waiter that asked before the cluster answered again was told, with the error
    # it is (transient: the waits go on), not a "not yet" and not a different error.
    assert errors and all(error is failure for error in errors), errors
    assert all(is_transient(error) for error in errors)
    assert seen[-1] == CLOCK
    # Two failed attempts, then it reads again: not one attempt per waiter.
    session = sessions.opened[0]
    assert session.reads <= 0.8 / 0.1 + 2, session.reads


def test_a_cancelled_waiter_does_not_cancel_the_others_reading() -> None:
    sessions = Sessions(delay=0.3)
    shared = SharedClocks(sessions)
    cfg = config()

    async def main() -> tuple[list[NodeClock], list[NodeClock]]:
        async def waiter() -> list[NodeClock]:
            async with shared.use(cfg, access_for(cfg)) as read:
                return await read(1.0)

        first, second, third = (asyncio.create_task(waiter()) for _ in range(3))
        await asyncio.sleep(0.1)
        first.cancel()  # the triggerer cancels a trigger whose task was cleared
        with pytest.raises(asyncio.CancelledError):
            await first
        return await second, await third

    assert asyncio.run(main()) == (CLOCK, CLOCK)
    assert sessions.opened[0].reads == 1 and sessions.opened[0].closed == 1


def test_the_session_closes_with_the_last_waiter_and_the_next_one_opens_anew() -> None:
    sessions = Sessions(delay=0.0)
    shared = SharedClocks(sessions)
    cfg = config()

    async def main() -> None:
        async with shared.use(cfg, access_for(cfg)) as read:
            async with shared.use(cfg, access_for(cfg)) as read_too:
                await read(1.0)
                await read_too(1.0)
            assert sessions.opened[0].closed == 0  # one waiter is still there
        assert sessions.opened[0].closed == 1 and shared.pollers() == 0
        async with shared.use(cfg, access_for(cfg)) as read:
            await read(1.0)

    asyncio.run(main())
    assert [s.closed for s in sessions.opened] == [1, 1]
    assert [s.reads for s in sessions.opened] == [1, 1]


def test_one_session_per_connection_identity() -> None:
    sessions = Sessions(delay=0.0)
    shared = SharedClocks(sessions)
    same = (config(), config(contact_points="10.0.0.1, 10.0.0.2"))
    other = (
        config(port=9142),
        config(contact_points="10.0.0.3"),
        config(tls=True),
        config(username="reader", password=SECRET),
        config(username="reader", password=SECRET + "x"),
        config(clock_source="cql", source_keyspace_prefix="other_"),
    )

    async def main() -> int:
        async def hold(cfg: PipelineConfig, release: asyncio.Event) -> None:
            async with shared.use(cfg, access_for(cfg)) as read:
                await read(1.0)
                await release.wait()

        release = asyncio.Event()
        tasks = [asyncio.create_task(hold(cfg, release)) for cfg in (*same, *other)]
        await asyncio.sleep(0.2)
        pollers = shared.pollers()
        release.set()
        await asyncio.gather(*tasks)
        return pollers

    assert asyncio.run(main()) == 1 + len(other)
    assert len(sessions.opened) == 1 + len(other)


def test_the_key_neither_holds_nor_reveals_the_password() -> None:
    cfg = config(username="reader", password=SECRET)
    key = cluster_key(cfg, access_for(cfg))
    assert SECRET not in key and "reader" not in key and "10.0.0.1" not in key
    assert key == cluster_key(cfg, access_for(cfg))  # stable within the process


def test_a_reader_that_cannot_be_built_leaves_no_client_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shared session is read again every interval: a client opened for a reader
    that failed to build must be closed, or each interval leaks a driver Cluster."""
    import cdcgen.adapters.clock_reader as clocks
    import cdcgen.adapters.cql as cql
    from cdcgen.adapters.clock_sessions import ClockSession

    opened: list[Any] = []

    class Client:
        closed = False

        def close(self) -> None:
            self.closed = True

    def connect(*_args: Any, **_kwargs: Any) -> Client:
        opened.append(Client())
        return opened[-1]

    def no_reader(*_args: Any, **_kwargs: Any) -> Any:
        raise ConnectionFailed("the clock source cannot be read")

    monkeypatch.setattr(cql, "connect", connect)
    monkeypatch.setattr(clocks, "clock_reader_for", no_reader)
    session = ClockSession(PipelineConfig(), access=ClusterAccess())
    for _ in range(3):
        with pytest.raises(ConnectionFailed):
            session.read_clocks()
    assert len(opened) == 3 and all(client.closed for client in opened)


def test_the_clock_client_loads_no_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """It reads clocks only: a schema loaded, and reloaded at every change another client
    makes on the cluster, would cost the triggerer for nothing."""
    import cdcgen.adapters.clock_reader as clocks
    import cdcgen.adapters.cql as cql
    from cdcgen.adapters.clock_sessions import ClockSession

    opened: list[dict[str, Any]] = []

    class Client:
        def close(self) -> None:
            pass

    class Reader:
        def read_clocks(self) -> list[NodeClock]:
            return CLOCK

    def connect(*_args: Any, **kwargs: Any) -> Client:
        opened.append(kwargs)
        return Client()

    monkeypatch.setattr(cql, "connect", connect)
    monkeypatch.setattr(clocks, "clock_reader_for", lambda *_args: Reader())
    assert ClockSession(PipelineConfig(), access=ClusterAccess()).read_clocks() == CLOCK
    assert [kwargs.get("schema_metadata") for kwargs in opened] == [False]
