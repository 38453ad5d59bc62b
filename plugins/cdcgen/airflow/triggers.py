"""``GenerationStartedTrigger``: wait, without a worker slot, until a generation runs everywhere.

A generation with timestamp ``T`` can still receive writes from a node whose
clock is behind ``T + leeway`` (design doc section 4).  So the pipeline must not
treat it as started, or its predecessor as closed, until **every** node's clock
has passed ``T + leeway``: a node that is skewed behind, or that cannot be read,
keeps the wait going.  After the timeout the trigger reports which nodes were
lagging or unreachable, and why.

This module is imported by the triggerer from the installed package (the
triggerer does not load DAG bundles).  The blocking cassandra-driver calls run in
a thread so the triggerer's event loop stays free for other triggers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from cdcgen.config import PipelineConfig
from cdcgen.core.clocks import NodeClock
from cdcgen.core.generation import SourceMode

#: While waiting, the lagging nodes are logged at most this often (polls are every second).
LOG_EVERY_SECONDS = 30.0

STARTED = "started"
TIMEOUT = "timeout"
ERROR = "error"

# Settings the trigger needs to rebuild a clock reader in the triggerer; no secrets.
_CLOCK_SETTINGS = (
    "contact_points",
    "port",
    "source_mode",
    "source_keyspace_prefix",
    "clock_source",
)


def clock_settings(config: PipelineConfig) -> dict[str, Any]:
    """The JSON-safe part of ``config`` a clock reader is built from (trigger kwargs)."""
    return {
        "contact_points": list(config.contact_points),
        "port": config.port,
        "source_mode": str(config.source_mode),
        "source_keyspace_prefix": config.source_keyspace_prefix,
        "clock_source": config.clock_source,
    }


def config_from_clock_settings(settings: dict[str, Any]) -> PipelineConfig:
    unknown = set(settings) - set(_CLOCK_SETTINGS)
    if unknown:
        raise ValueError(f"unknown clock settings {sorted(unknown)}")
    return PipelineConfig(
        contact_points=tuple(settings["contact_points"]),
        port=int(settings["port"]),
        source_mode=SourceMode(settings["source_mode"]),
        source_keyspace_prefix=settings["source_keyspace_prefix"],
        clock_source=settings["clock_source"],
    )


def _utc(moment: datetime) -> datetime:
    # cassandra-driver returns naive datetimes for `timestamp` values, in UTC.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def from_millis(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


@dataclass(frozen=True)
class ClockCheck:
    """One reading of every node's clock against the moment the generation must have passed."""

    target: datetime
    clocks: tuple[NodeClock, ...]

    @property
    def lagging(self) -> tuple[NodeClock, ...]:
        """Nodes that could not be read or whose clock is still before ``target``."""
        return tuple(
            c for c in self.clocks if c.clock is None or c.error or _utc(c.clock) < self.target
        )

    @property
    def ready(self) -> bool:
        return bool(self.clocks) and not self.lagging

    def describe(self) -> str:
        """One clause per lagging node, naming it; used in logs and the failure message."""
        if not self.clocks:
            return "no node reported a clock"
        parts = []
        for c in self.lagging:
            if c.clock is None or c.error:
                parts.append(f"node {c.node} unreachable ({c.error or 'no clock value'})")
            else:
                short = (self.target - _utc(c.clock)).total_seconds()
                parts.append(
                    f"node {c.node} clock {_utc(c.clock).isoformat()} is {short:.3f} s "
                    f"before {self.target.isoformat()}"
                )
        return "; ".join(parts) if parts else "every node has passed the target"

    def lagging_json(self) -> list[dict[str, Any]]:
        return [
            {
                "node": c.node,
                "clock": _utc(c.clock).isoformat() if c.clock is not None else None,
                "error": c.error,
            }
            for c in self.lagging
        ]


def transient_error(exc: BaseException) -> bool:
    """Errors worth retrying: the cluster or the network, not a bug or a bad setting."""
    from cdcgen.adapters.cql import ConnectionFailed

    if isinstance(exc, ConnectionFailed | OSError | TimeoutError):
        return True
    return type(exc).__module__.split(".", 1)[0] == "cassandra"


async def wait_until_started(
    read_clocks: Callable[[], Awaitable[Sequence[NodeClock]]],
    *,
    generation_ts_ms: int,
    leeway: timedelta,
    timeout: timedelta,
    poll_interval: float,
    log: Callable[[str], None] = lambda _msg: None,
    monotonic: Callable[[], float] = time.monotonic,
    is_transient: Callable[[BaseException], bool] | None = None,
    subject: str | None = None,
) -> dict[str, Any]:
    """Poll ``read_clocks`` until every node's clock >= T + leeway; return the event payload.

    A failed read is not "not yet": a transient one (network, driver) is remembered
    and named if the timeout comes while polling goes on, because a node restarting
    is the common case; any other error ends the wait at once with status ``error``.
    """
    is_transient = is_transient or transient_error
    target = from_millis(generation_ts_ms) + leeway
    deadline = monotonic() + timeout.total_seconds()
    last: ClockCheck | None = None
    last_error: str | None = None
    next_log = 0.0
    while True:
        try:
            last = ClockCheck(target, tuple(await read_clocks()))
            last_error = None
        except Exception as exc:
            if not is_transient(exc):
                return {
                    "status": ERROR,
                    "generation_ts_ms": generation_ts_ms,
                    "message": f"cannot read node clocks: {type(exc).__name__}: {exc}",
                }
            # Transient: remembered, named if the timeout comes.
            last_error = f"{type(exc).__name__}: {exc}"
            log(f"reading clocks failed, will retry: {last_error}")
        if last is not None and last_error is None and last.ready:
            return {
                "status": STARTED,
                "generation_ts_ms": generation_ts_ms,
                "target": target.isoformat(),
                "clocks": {c.node: _utc(c.clock).isoformat() for c in last.clocks if c.clock},
            }
        remaining = deadline - monotonic()
        if remaining <= 0:
            why = last_error or (last.describe() if last else "no clock was read")
            if last_error and last is not None:
                why = f"{last_error}; last reading: {last.describe()}"
            return {
                "status": TIMEOUT,
                "generation_ts_ms": generation_ts_ms,
                "target": target.isoformat(),
                "lagging": last.lagging_json() if last else [],
                "message": (
                    f"{subject or 'generation ' + from_millis(generation_ts_ms).isoformat()} "
                    f"has not started on every node after {timeout.total_seconds():g} s "
                    "(needs every clock past "
                    f"{target.isoformat()}): {why}"
                ),
            }
        if last is not None and last_error is None and monotonic() >= next_log:
            log(last.describe())
            next_log = monotonic() + LOG_EVERY_SECONDS
        # Clocks advance in real time: sleep about as long as the largest shortfall.
        shortfall = max(
            (
                (target - _utc(c.clock)).total_seconds()
                for c in (last.lagging if last else ())
                if c.clock is not None and not c.error
            ),
            default=poll_interval,
        )
        await asyncio.sleep(max(0.05, min(poll_interval, shortfall, remaining)))


class GenerationStartedTrigger(BaseTrigger):
    """Fires once every node's clock is past ``generation_ts_ms + leeway`` (or on timeout).

    ``subject`` names what is waited for in the timeout message (default: the generation);
    the changes DAG waits for a window end the same way, with a larger ``leeway``.
    """

    def __init__(
        self,
        *,
        generation_ts_ms: int,
        source: dict[str, Any],
        leeway_seconds: float,
        timeout_seconds: float,
        poll_interval: float = 1.0,
        subject: str | None = None,
    ) -> None:
        super().__init__()
        self.subject = subject
        self.generation_ts_ms = int(generation_ts_ms)
        self.source = dict(source)
        self.leeway_seconds = float(leeway_seconds)
        self.timeout_seconds = float(timeout_seconds)
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "generation_ts_ms": self.generation_ts_ms,
                "source": self.source,
                "leeway_seconds": self.leeway_seconds,
                "timeout_seconds": self.timeout_seconds,
                "poll_interval": self.poll_interval,
                "subject": self.subject,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            config = config_from_clock_settings(self.source)
        except (ValueError, KeyError) as exc:
            yield TriggerEvent({"status": ERROR, "message": f"bad trigger settings: {exc}"})
            return
        session = _ClockSession(config)
        try:
            payload = await wait_until_started(
                session.read,
                generation_ts_ms=self.generation_ts_ms,
                leeway=timedelta(seconds=self.leeway_seconds),
                timeout=timedelta(seconds=self.timeout_seconds),
                poll_interval=self.poll_interval,
                log=self.log.info,
                subject=self.subject,
            )
        finally:
            await asyncio.shield(asyncio.to_thread(session.close))
        yield TriggerEvent(payload)


class _ClockSession:
    """A lazily (re)connected clock reader; every call blocks, so callers use threads."""

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self._client: Any = None
        self._reader: Any = None

    def read_blocking(self) -> list[NodeClock]:
        if self._reader is None:
            from cdcgen.adapters.clocks import clock_reader_for
            from cdcgen.adapters.cql import connect

            self._client = connect(self.config.contact_points, self.config.port)
            self._reader = clock_reader_for(self._client, self.config)
        try:
            return list(self._reader.read_clocks())
        except Exception:
            self.close()  # reconnect on the next poll
            raise

    async def read(self) -> list[NodeClock]:
        return await asyncio.to_thread(self.read_blocking)

    def close(self) -> None:
        client, self._client, self._reader = self._client, None, None
        if client is not None:
            client.close()


def read_clocks_once(config: PipelineConfig) -> list[NodeClock]:
    """One synchronous reading (the sensor's first check and ``poke``)."""
    session = _ClockSession(config)
    try:
        return session.read_blocking()
    finally:
        session.close()
