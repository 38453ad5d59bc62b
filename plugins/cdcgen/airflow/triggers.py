"""The triggerer's two jobs: ``ClockPastTrigger`` waits, without a worker slot, until every
node's clock is past an instant; ``GenerationCommittedTrigger`` (at the end) watches for
new generations, the generations DAG's event-driven schedule.

The instant comes from the sensor (:mod:`cdcgen.airflow.sensors`), which applies the
rules of :mod:`cdcgen.core.clocks`: a generation's timestamp plus leeway, or a changes
window's end plus leeway and confidence window. A node that is skewed behind, or that
cannot be read, keeps the wait going. After the timeout the trigger reports which nodes
were lagging or unreachable, and why.

This module is imported by the triggerer from the installed package (the
triggerer does not load DAG bundles). Every trigger of the process waiting on the same
cluster shares one client and one reading per poll interval
(:mod:`cdcgen.adapters.clock_sessions`), so a backlog of deferred sensors costs the
triggerer what one does; the blocking cassandra-driver calls run in a thread so its event
loop stays free for other triggers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NotRequired

from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent
from asgiref.sync import sync_to_async
from pydantic import TypeAdapter
from typing_extensions import TypedDict

from cdcgen.access_settings import AccessSettings
from cdcgen.adapters.clock_sessions import SHARED_CLOCKS
from cdcgen.adapters.cluster_access import access_for
from cdcgen.adapters.errors import is_transient
from cdcgen.config import PipelineConfig
from cdcgen.core.clocks import ClockCheck, NodeClock
from cdcgen.core.generation import Generation
from cdcgen.core.time import from_millis, iso_millis

#: While waiting, the lagging nodes are logged at most this often (polls are every second).
LOG_EVERY_SECONDS = 30.0

STARTED = "started"
TIMEOUT = "timeout"
ERROR = "error"


class ClockSettings(TypedDict, total=False):
    """What the triggerer rebuilds a clock reader from (a trigger's ``source`` kwarg, JSON
    in the metadata database): the settings of :data:`_CLOCK_SETTINGS` that are set, and
    the connection whose login and password it reads (never the credentials themselves)."""

    contact_points: list[str]
    port: int
    protocol_version: int
    source_mode: str
    source_keyspace_prefix: str
    clock_source: str
    tls: bool
    tls_ca_file: str
    tls_cert_file: str
    tls_key_file: str
    tls_verify_hostname: bool
    conn_id: str


class LaggingNode(TypedDict):
    """A node that kept a wait going: its clock (ISO), or why it could not be read."""

    node: str
    clock: str | None
    error: str | None


class ClockEvent(TypedDict):
    """The payload of :class:`ClockPastTrigger`'s event, which the sensor's
    ``execute_complete`` reads: ``started`` (each node's clock), ``timeout`` (the nodes
    lagging, named in ``message``) or ``error``."""

    status: str
    target: NotRequired[str]
    clocks: NotRequired[dict[str, str]]
    lagging: NotRequired[list[LaggingNode]]
    message: NotRequired[str]


class CommittedEvent(TypedDict):
    """The payload of :class:`GenerationCommittedTrigger`'s event: the generations
    committed and not published (:func:`cdcgen.pipeline.watch.describe`)."""

    status: str
    cluster: str
    generations: list[dict[str, object]]
    detected_at: str


#: Checks and orders a clock reader's settings (pydantic reads a TypedDict field by field).
_CLOCK_SETTINGS_JSON: TypeAdapter[ClockSettings] = TypeAdapter(ClockSettings)


# Settings the trigger needs to rebuild a clock reader in the triggerer. No credentials:
# trigger kwargs are stored in the metadata database; the triggerer reads them from the
# connection named by "conn_id" (or, outside Airflow, from its own environment).
_CLOCK_SETTINGS = (
    "contact_points",
    "port",
    "source_mode",
    "source_keyspace_prefix",
    "clock_source",
    "protocol_version",
    "tls",
    "tls_ca_file",
    "tls_cert_file",
    "tls_key_file",
    "tls_verify_hostname",
)


def clock_settings(config: PipelineConfig, conn_id: str | None = None) -> ClockSettings:
    """The JSON-safe, secret-free part of ``config`` a clock reader is built from."""
    wanted = set(_CLOCK_SETTINGS)
    dumped = config.model_dump(mode="json", include=wanted)
    dumped |= config.access.model_dump(mode="json", include=wanted)
    given = {name: value for name, value in dumped.items() if value is not None}
    settings = _CLOCK_SETTINGS_JSON.validate_python(given)
    settings["tls"] = config.access.uses_tls
    if conn_id is not None:
        settings["conn_id"] = conn_id
    return settings


def config_from_clock_settings(
    settings: ClockSettings,
    *,
    login: str | None = None,
    password: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> PipelineConfig:
    """The clock reader's configuration: ``settings``, and credentials from the connection
    (``login``, ``password``) or else from the ``CDCGEN_*`` credentials of ``environ``."""
    unknown = set(settings) - set(_CLOCK_SETTINGS) - {"conn_id"}
    if unknown:
        raise ValueError(f"unknown clock settings {sorted(unknown)}")
    values = {name: value for name, value in settings.items() if name != "conn_id"}
    if login or password:
        values.update(username=login, password=password)
    else:
        given = AccessSettings.read_env(environ)
        values.update({v: given[v] for v in AccessSettings.credential_variables() if v in given})
    return PipelineConfig.validated(values)


def connection_credentials(conn_id: str) -> tuple[str | None, str | None]:
    """The login and password of an Airflow connection (blocking: call it in a thread)."""
    from airflow.sdk import BaseHook

    connection = BaseHook.get_connection(conn_id)
    return connection.login, connection.password


async def wait_until_past(
    read_clocks: Callable[[], Awaitable[Sequence[NodeClock]]],
    *,
    target_ms: int,
    timeout: timedelta,
    poll_interval: float,
    subject: str,
    log: Callable[[str], None] = lambda _msg: None,
    monotonic: Callable[[], float] = time.monotonic,
    transient: Callable[[BaseException], bool] = is_transient,
) -> ClockEvent:
    """Poll ``read_clocks`` until every node's clock is at or past the target instant;
    return the event payload.

    A failed read is not "not yet": a transient one (network, driver) is remembered
    and named if the timeout comes while polling goes on, because a node restarting
    is the common case; any other error ends the wait at once with status ``error``.
    """
    target = from_millis(target_ms)
    deadline = monotonic() + timeout.total_seconds()
    last: ClockCheck | None = None
    last_error: str | None = None
    next_log = 0.0
    while True:
        try:
            last = ClockCheck(target, tuple(await read_clocks()))
            last_error = None
        except Exception as exc:
            if not transient(exc):
                return {
                    "status": ERROR,
                    "target": target.isoformat(),
                    "message": f"cannot read node clocks: {type(exc).__name__}: {exc}",
                }
            # Transient: remembered, named if the timeout comes.
            last_error = f"{type(exc).__name__}: {exc}"
            log(f"reading clocks failed, will retry: {last_error}")
        if last is not None and last_error is None and last.ready:
            return {
                "status": STARTED,
                "target": target.isoformat(),
                "clocks": {
                    c.node: reading.isoformat()
                    for c in last.clocks
                    if (reading := c.reading) is not None
                },
            }
        remaining = deadline - monotonic()
        if remaining <= 0:
            why = last_error or (last.describe() if last else "no clock was read")
            if last_error and last is not None:
                why = f"{last_error}; last reading: {last.describe()}"
            return {
                "status": TIMEOUT,
                "target": target.isoformat(),
                "lagging": _lagging_json(last) if last else [],
                "message": (
                    f"{subject}: not every node's clock is past {target.isoformat()} "
                    f"after {timeout.total_seconds():g} s: {why}"
                ),
            }
        if last is not None and last_error is None and monotonic() >= next_log:
            log(last.describe())
            next_log = monotonic() + LOG_EVERY_SECONDS
        # Clocks advance in real time: sleep about as long as the largest shortfall.
        shortfall = (last.shortfall() if last else None) or poll_interval
        await asyncio.sleep(max(0.05, min(poll_interval, shortfall, remaining)))


def _lagging_json(check: ClockCheck) -> list[LaggingNode]:
    return [
        LaggingNode(
            node=c.node,
            clock=reading.isoformat() if (reading := c.reading) is not None else None,
            error=c.error,
        )
        for c in check.lagging
    ]


class ClockPastTrigger(BaseTrigger):
    """Fires once every node's clock is at or past ``target_ms`` (or on timeout).

    ``subject`` names what is waited for (a generation, a changes window) in the messages.
    """

    def __init__(
        self,
        *,
        target_ms: int,
        source: ClockSettings,
        timeout_seconds: float,
        subject: str,
        poll_interval: float = 1.0,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # BaseTrigger.__init__(**kwargs) has no annotations
        self.target_ms = int(target_ms)
        self.source = source.copy()
        self.timeout_seconds = float(timeout_seconds)
        self.subject = subject
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "target_ms": self.target_ms,
                "source": self.source,
                "timeout_seconds": self.timeout_seconds,
                "subject": self.subject,
                "poll_interval": self.poll_interval,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            conn_id = self.source.get("conn_id")
            login, password = (
                await sync_to_async(connection_credentials)(conn_id) if conn_id else (None, None)
            )
            config = config_from_clock_settings(self.source, login=login, password=password)
            # The TLS and password files, read once (in a thread: they are files).
            access = await asyncio.to_thread(access_for, config)
        except (ValueError, KeyError) as exc:
            yield TriggerEvent({"status": ERROR, "message": f"bad trigger settings: {exc}"})
            return
        async with SHARED_CLOCKS.use(config, access) as read_clocks:
            payload = await wait_until_past(
                lambda: read_clocks(self.poll_interval),
                target_ms=self.target_ms,
                timeout=timedelta(seconds=self.timeout_seconds),
                poll_interval=self.poll_interval,
                subject=self.subject,
                log=self.log.info,
            )
        yield TriggerEvent(payload)


#: Seconds between two polls of the generation metadata by default: a new generation
#: starts a run within about this long, and a quiet cluster answers one small read each.
WATCH_POLL_SECONDS = 5.0
#: After a failure that another poll cannot mend (a bad connection or setting, refused
#: access), the connection is read again after this long, not at every poll.
WATCH_RETRY_SECONDS = 60.0
#: Event payload status: generations committed that consumers cannot see yet.
COMMITTED = "committed"


class GenerationCommittedTrigger(BaseEventTrigger):
    """Fires when the source cluster commits a generation (raft, gossip or V1) or a
    tablets stream set that is not published yet: the generations DAG's event-driven
    schedule, watching an Asset (:func:`cdcgen.airflow.assets.committed_generations`).

    Polls every ``poll_interval`` seconds through the process's shared session of the
    cluster (:mod:`cdcgen.adapters.watch_sessions`); which generations make an event is
    :class:`cdcgen.pipeline.watch.GenerationWatch`'s rule. It never ends by itself: a
    watcher that returned would leave the DAG on its cron schedule alone, so failures are
    logged and polling goes on (after :data:`WATCH_RETRY_SECONDS` when the connection
    must be read again).

    Its kwargs are what the DAG file knows without I/O (the connection's id, the target
    keyspace the Assets are named by, the interval), never credentials (trigger kwargs
    are stored in the metadata database), and the same at every parse: Airflow keys a
    watcher by them, and a change restarts it.
    """

    def __init__(
        self,
        *,
        conn_id: str,
        target_keyspace: str | None = None,
        poll_interval: float = WATCH_POLL_SECONDS,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # BaseEventTrigger.__init__(**kwargs) has no annotations
        self.conn_id = conn_id
        self.target_keyspace = target_keyspace
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "conn_id": self.conn_id,
                "target_keyspace": self.target_keyspace,
                "poll_interval": self.poll_interval,
            },
        )

    def _config(self) -> PipelineConfig:
        """The connection's configuration (blocking: call it through ``sync_to_async``)."""
        from cdcgen.airflow.hooks import CdcSourceHook

        config = CdcSourceHook(self.conn_id).get_config()
        if self.target_keyspace:
            config = config.with_overrides(target_keyspace=self.target_keyspace)
        return config

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from cdcgen.adapters.watch_sessions import SHARED_WATCH_SESSIONS
        from cdcgen.pipeline.watch import GenerationWatch

        watch = GenerationWatch()  # one per run(): a triggerer restart announces again
        complaint = _Complaint(self.log.warning)
        while True:
            try:
                config = await sync_to_async(self._config)()
                access = await asyncio.to_thread(access_for, config)
            except Exception as exc:  # a bad connection or setting: said, read again later
                complaint.say(f"cannot read the connection {self.conn_id!r}", exc)
                await asyncio.sleep(max(self.poll_interval, WATCH_RETRY_SECONDS))
                continue
            async with SHARED_WATCH_SESSIONS.use(config, access) as poll:
                while True:
                    try:
                        new = await poll(lambda ports: watch.poll(ports.source, ports.publisher))
                    except Exception as exc:
                        complaint.say(f"polling the generations of {self.conn_id!r}", exc)
                        if not is_transient(exc):
                            break  # refused access, a setting: the connection is read again
                        await asyncio.sleep(self.poll_interval)
                        continue
                    complaint.clear(f"polling the generations of {self.conn_id!r} again")
                    if new:
                        yield TriggerEvent(self._payload(new))
                    await asyncio.sleep(self.poll_interval)
            await asyncio.sleep(max(self.poll_interval, WATCH_RETRY_SECONDS))

    def _payload(self, new: Sequence[Generation]) -> CommittedEvent:
        from cdcgen.pipeline.watch import describe

        label = ", ".join(g.label for g in new)
        self.log.info("%s committed, not published: starting a run", label)
        return CommittedEvent(
            status=COMMITTED,
            cluster=self.conn_id,
            generations=describe(new),
            detected_at=iso_millis(datetime.now(UTC)),
        )


class _Complaint:
    """A failure is logged when it starts or changes, not at every poll (a cluster down
    for an hour would otherwise fill the triggerer's log)."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self._log = log
        self._last: str | None = None

    def say(self, what: str, exc: BaseException) -> None:
        kind = "transient" if is_transient(exc) else "needs a fix"
        message = f"{what} failed ({kind}): {type(exc).__name__}: {exc}"
        if message != self._last:
            self._log(message)
        self._last = message

    def clear(self, message: str) -> None:
        if self._last is not None:
            self._log(message)
        self._last = None
