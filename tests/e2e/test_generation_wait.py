"""The wait step's rule: every node's clock past T + leeway, else wait, then name the nodes.

Driven through :func:`wait_until_past` and the trigger's ``run`` with scripted
clock readings (the real readers are exercised by the DAG test against the sandbox).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cdcgen.core.clocks import NodeClock

TS_MS = 1_790_000_000_000
T = datetime.fromtimestamp(TS_MS / 1000, tz=UTC)
LEEWAY = timedelta(seconds=5)


def reading(**offsets: float | None) -> list[NodeClock]:
    """Clocks at T + offset seconds per node name; None = unreachable."""
    return [
        NodeClock(node, None, "OperationTimedOut: 2 s")
        if off is None
        else NodeClock(node, T + timedelta(seconds=off))
        for node, off in offsets.items()
    ]


class Script:
    """Scripted readings, one per poll; the last one repeats."""

    def __init__(self, *readings: list[NodeClock] | Exception) -> None:
        self._readings: Iterator[list[NodeClock] | Exception] = iter(readings)
        self._last: list[NodeClock] | Exception = readings[-1]
        self.calls = 0

    async def __call__(self) -> Sequence[NodeClock]:
        self.calls += 1
        item = next(self._readings, self._last)
        if isinstance(item, Exception):
            raise item
        return item


def wait(script: Script, timeout: float = 0.3) -> dict[str, Any]:
    from cdcgen.airflow.triggers import wait_until_past
    from cdcgen.core.clocks import generation_started_at
    from cdcgen.core.time import to_millis

    return asyncio.run(
        wait_until_past(
            script,
            target_ms=to_millis(generation_started_at(T, LEEWAY)),
            timeout=timedelta(seconds=timeout),
            poll_interval=0.01,
            subject="generation g",
        )
    )


def test_started_when_every_clock_reaches_t_plus_leeway() -> None:
    event = wait(Script(reading(a=5.0, b=7.5)))
    assert event["status"] == "started"
    assert event["target"] == (T + LEEWAY).isoformat()
    assert set(event["clocks"]) == {"a", "b"}


def test_keeps_waiting_while_one_node_is_behind() -> None:
    script = Script(reading(a=9, b=1), reading(a=9, b=4.9), reading(a=9.1, b=5.2))
    event = wait(script, timeout=5)
    assert event["status"] == "started"
    assert script.calls == 3


def test_skewed_node_times_out_and_is_named() -> None:
    event = wait(Script(reading(a=60, b=-3)))
    assert event["status"] == "timeout"
    assert [n["node"] for n in event["lagging"]] == ["b"]
    assert "node b clock" in event["message"] and "8.000 s before" in event["message"]
    assert "node a clock" not in event["message"]


def test_unreachable_node_keeps_it_waiting() -> None:
    event = wait(Script(reading(a=60, b=None)))
    assert event["status"] == "timeout"
    assert "node b unreachable (OperationTimedOut: 2 s)" in event["message"]


def test_no_clock_at_all_is_not_started() -> None:
    event = wait(Script([]))
    assert event["status"] == "timeout"
    assert "no node clock was read" in event["message"]


def test_transient_errors_are_retried_then_named() -> None:
    from cdcgen.adapters.errors import ConnectionFailed

    recovered = wait(Script(ConnectionFailed("no CQL node answered"), reading(a=6)), timeout=5)
    assert recovered["status"] == "started"
    failed = wait(Script(ConnectionFailed("no CQL node answered at 127.0.0.1:9042")))
    assert failed["status"] == "timeout"
    assert "no CQL node answered at 127.0.0.1:9042" in failed["message"]


def test_a_bug_is_not_retried() -> None:
    script = Script(KeyError("clock"))
    event = wait(script, timeout=5)
    assert event["status"] == "error"
    assert script.calls == 1


class Sessions:
    """The triggers' sessions (the shared poller's port): clocks that run from T - 0.5 s as
    the test runs, or fail with ``error``; keeps every session opened."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.opened: list[Sessions] = []
        self.started = time.monotonic()
        self.reads = 0
        self.closed = 0

    def __call__(self, config: Any, access: Any) -> Sessions:
        self.opened.append(self)
        return self

    def read_clocks(self) -> list[NodeClock]:
        self.reads += 1
        if self.error is not None:
            raise self.error
        elapsed = time.monotonic() - self.started
        return [NodeClock("a", T + timedelta(seconds=elapsed - 0.5))]

    def close(self) -> None:
        self.closed += 1


SOURCE = {
    "contact_points": ["127.0.0.1"],
    "port": 9042,
    "source_mode": "gossip",
    "source_keyspace_prefix": "sandbox_",
    "clock_source": "sandbox",
}


def run_triggers(
    monkeypatch: pytest.MonkeyPatch, sessions: Sessions, *targets: tuple[float, float]
) -> list[dict[str, Any]]:
    """One ClockPastTrigger per ``(seconds after T, timeout)``, all run concurrently in one
    event loop as the triggerer runs them; their events' payloads, in that order."""
    from cdcgen.adapters.clock_sessions import SharedClocks
    from cdcgen.airflow import triggers

    monkeypatch.setattr(triggers, "SHARED_CLOCKS", SharedClocks(sessions))

    async def one(offset: float, timeout: float) -> dict[str, Any]:
        trigger = triggers.ClockPastTrigger(
            target_ms=TS_MS + int(offset * 1000),
            subject="generation g",
            source=SOURCE,
            timeout_seconds=timeout,
            poll_interval=0.05,
        )
        events = [event async for event in trigger.run()]
        assert len(events) == 1
        payload: dict[str, Any] = events[0].payload
        return payload

    async def main() -> list[dict[str, Any]]:
        return await asyncio.gather(*(one(offset, timeout) for offset, timeout in targets))

    return asyncio.run(main())


def test_trigger_run_yields_one_event(monkeypatch: pytest.MonkeyPatch) -> None:
    sessions = Sessions()
    events = run_triggers(monkeypatch, sessions, (0.0, 10))
    assert [event["status"] for event in events] == ["started"]
    assert sessions.closed == 1


def test_triggers_share_a_session_and_keep_their_own_targets_and_timeouts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sessions = Sessions()
    targets = [(0.1 * (i % 4), 10.0) for i in range(40)] + [(60.0, 0.5)]
    events = run_triggers(monkeypatch, sessions, *targets)
    assert len(sessions.opened) == 1 and sessions.closed == 1
    for (offset, _), event in zip(targets, events, strict=True):
        if offset == 60.0:
            assert event["status"] == "timeout" and "after 0.5 s" in event["message"]
            continue
        assert event["status"] == "started"
        # Never early: the clock it saw is at or past its own target.
        seen = datetime.fromisoformat(event["clocks"]["a"])
        assert seen >= T + timedelta(seconds=offset)
    # About 1.5 s of waits at 0.05 s: one poller's readings, not 41 pollers'.
    assert sessions.reads <= 1.5 / 0.05 * 2, sessions.reads


def test_a_failed_shared_reading_reaches_every_trigger_as_what_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cdcgen.adapters.errors import ConnectionFailed

    transient = run_triggers(
        monkeypatch,
        Sessions(ConnectionFailed("no CQL node answered at 127.0.0.1:9042")),
        *[(0.0, 0.3)] * 20,
    )
    # Transient: every wait went on until its timeout, and names the cause.
    assert {event["status"] for event in transient} == {"timeout"}
    assert all("no CQL node answered at 127.0.0.1:9042" in e["message"] for e in transient)
    terminal = run_triggers(monkeypatch, Sessions(KeyError("clock")), *[(0.0, 30.0)] * 20)
    # Terminal: every wait ends at once with the error, not after its 30 s.
    assert {event["status"] for event in terminal} == {"error"}
    assert all("KeyError" in event["message"] for event in terminal)
