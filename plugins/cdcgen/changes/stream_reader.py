"""Read one stream's window: one prepared query, page by page, retried with backoff.

The query is the only shape the design allows (a single partition, a time slice)::

    SELECT ... WHERE "cdc$stream_id" = ? AND "cdc$time" >= minTimeuuid(?)
                 AND "cdc$time" < minTimeuuid(?)

Each page is its own request, resumed from the previous page's paging state, so a page
that times out is re-requested alone: nothing before it is read twice and nothing after
it is skipped. Errors are split like dlt splits them: transient ones (timeouts,
unavailable replicas, overload, lost connections) are retried with exponential backoff
and full jitter; terminal ones (invalid query, no permission) fail at once, because
retrying cannot fix them. The session comes from :func:`open_read_session`, whose
load-balancing policy sends each query to a replica of the stream's own token.
"""

from __future__ import annotations

import atexit
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from cdcgen.changes.log_table import LogTable
from cdcgen.changes.routing import stream_routing_policy
from cdcgen.changes.settings import ChangesSettings
from cdcgen.core.cdc_log import LogPartitioner

if TYPE_CHECKING:
    from cassandra.cluster import Cluster, Session

log = logging.getLogger(__name__)


class StreamReadError(Exception):
    """A stream window could not be read; the message names the stream and window."""


class TransientReadError(StreamReadError):
    """Still failing after every retry; a later attempt (task retry, DAG retry) may work."""


class TerminalReadError(StreamReadError):
    """Retrying cannot help (bad query, missing table, no permission)."""


def is_transient(exc: BaseException) -> bool:
    """True for errors a later attempt may not hit: timeouts, unavailability, overload."""
    from cassandra import (
        CoordinationFailure,
        OperationTimedOut,
        Timeout,
        Unavailable,
    )
    from cassandra.cluster import NoHostAvailable
    from cassandra.connection import ConnectionException
    from cassandra.protocol import (
        IsBootstrappingErrorMessage,
        OverloadedErrorMessage,
        ServerError,
    )

    transient = (
        Timeout,
        Unavailable,
        CoordinationFailure,
        OperationTimedOut,
        NoHostAvailable,
        ConnectionException,
        OverloadedErrorMessage,
        IsBootstrappingErrorMessage,
        ServerError,
        ConnectionError,
        TimeoutError,
    )
    return isinstance(exc, transient)


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter: attempt ``n`` waits ``U(0, min(max, base*2^n))``."""

    max_attempts: int = 6
    base: timedelta = timedelta(milliseconds=200)
    cap: timedelta = timedelta(seconds=20)

    @classmethod
    def from_settings(cls, settings: ChangesSettings) -> Backoff:
        return cls(settings.max_attempts, settings.backoff_base, settings.backoff_max)

    def delay(self, attempt: int, rng: random.Random) -> float:
        ceiling = min(self.cap.total_seconds(), self.base.total_seconds() * (2**attempt))
        return rng.uniform(0, ceiling)


@dataclass
class ReadStats:
    """What a reader did; tasks report it so a run can show retries and query counts."""

    queries: int = 0
    pages: int = 0
    rows: int = 0
    retries: int = 0
    errors: list[str] = field(default_factory=list)


def with_retries(
    call: Callable[[], Any],
    what: str,
    backoff: Backoff,
    stats: ReadStats,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> Any:
    """Run ``call``; retry transient errors with backoff; raise a classified error."""
    rng = rng or random.Random()
    for attempt in range(backoff.max_attempts):
        try:
            return call()
        except Exception as exc:
            if not is_transient(exc):
                raise TerminalReadError(f"{what}: {type(exc).__name__}: {exc}") from exc
            stats.errors.append(f"{type(exc).__name__}: {exc}")
            if attempt + 1 >= backoff.max_attempts:
                raise TransientReadError(
                    f"{what}: still failing after {backoff.max_attempts} attempts: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            stats.retries += 1
            pause = backoff.delay(attempt, rng)
            log.warning("%s: %s; retrying in %.2fs", what, type(exc).__name__, pause)
            sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover


class StreamReader:
    """Reads windows of single streams of one CDC log table."""

    def __init__(
        self,
        session: Session,
        log_table: LogTable,
        settings: ChangesSettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        from cassandra import ConsistencyLevel

        self._session = session
        self._log_table = log_table
        self._settings = settings
        self._backoff = Backoff.from_settings(settings)
        self._sleep = sleep
        self._timeout = settings.request_timeout.total_seconds()
        self._consistency = getattr(ConsistencyLevel, settings.read_consistency)
        self.stats = ReadStats()
        self._statement = self._prepare(log_table.window_query())
        self._statement.fetch_size = settings.page_size
        self._count_statement: Any = None

    def _prepare(self, cql: str) -> Any:
        statement = with_retries(
            lambda: self._session.prepare(cql),
            f"prepare {self._log_table.table.qualified_log}",
            self._backoff,
            self.stats,
            self._sleep,
        )
        statement.consistency_level = self._consistency
        statement.is_idempotent = True
        return statement

    @property
    def column_metadata(self) -> Sequence[Any]:
        """``(keyspace, table, name, cqltype)`` per selected column, in query order."""
        return list(self._statement.result_metadata)

    @property
    def protocol_version(self) -> int:
        return int(self._session.cluster.protocol_version)

    def pages(self, stream: bytes, start: datetime, end: datetime) -> Iterator[list[Any]]:
        """The rows of ``stream`` with ``start <= cdc$time < end``, one list per page.

        Rows come in clustering order (``cdc$time``, ``cdc$batch_seq_no``): a key's
        changes in the order they were written.
        """
        bound = self._statement.bind((stream, start, end))
        what = f"{self._log_table.table.qualified_log} stream {stream.hex()} [{start}, {end})"
        paging_state: bytes | None = None
        self.stats.queries += 1
        while True:
            result = with_retries(
                self._page_call(bound, paging_state),
                what,
                self._backoff,
                self.stats,
                self._sleep,
            )
            rows = list(result.current_rows)
            self.stats.pages += 1
            self.stats.rows += len(rows)
            yield rows
            paging_state = result.paging_state
            if not paging_state:
                return

    def _page_call(self, bound: Any, paging_state: bytes | None) -> Callable[[], Any]:
        return lambda: self._session.execute(
            bound, timeout=self._timeout, paging_state=paging_state
        )

    def count(self, stream: bytes, start: datetime, end: datetime) -> int:
        """``COUNT(*)`` of the same window, computed by the server (the row checks' source)."""
        if self._count_statement is None:
            self._count_statement = self._prepare(self._log_table.count_query())
        bound = self._count_statement.bind((stream, start, end))
        what = f"count {self._log_table.table.qualified_log} stream {stream.hex()}"
        result = with_retries(
            lambda: self._session.execute(bound, timeout=self._timeout),
            what,
            self._backoff,
            self.stats,
            self._sleep,
        )
        self.stats.queries += 1
        return int(result.one()[0])


# --- sessions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionKey:
    """Everything that decides how a read session connects and routes (hashable)."""

    contact_points: tuple[str, ...]
    port: int
    partitioner: LogPartitioner
    request_timeout: float


def open_read_session(key: SessionKey) -> tuple[Cluster, Session]:
    """A driver session for CDC log reads: stream-aware routing, tuples, no driver retries.

    Retries are :func:`with_retries`' job (with backoff); the driver still fails over to
    the next replica when a connection breaks.
    """
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import FallthroughRetryPolicy
    from cassandra.query import tuple_factory

    profile = ExecutionProfile(
        load_balancing_policy=stream_routing_policy(key.partitioner),
        retry_policy=FallthroughRetryPolicy(),
        request_timeout=key.request_timeout,
        row_factory=tuple_factory,
    )
    cluster = Cluster(
        list(key.contact_points),
        port=key.port,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        protocol_version=5,
        connect_timeout=10,
    )
    return cluster, cluster.connect()


_SHARED: dict[SessionKey, tuple[Cluster, Session]] = {}
_SHARED_LOCK = threading.Lock()


def shared_session(key: SessionKey) -> Session:
    """One session per Python worker and key, reused by every task the worker runs.

    Spark reuses Python workers between tasks, so a run opens a handful of connections
    instead of one per task; the sessions close when the worker exits.
    """
    with _SHARED_LOCK:
        entry = _SHARED.get(key)
        if entry is None or entry[0].is_shutdown:
            entry = open_read_session(key)
            _SHARED[key] = entry
        return entry[1]


@atexit.register
def close_shared_sessions() -> None:
    with _SHARED_LOCK:
        for cluster, _ in _SHARED.values():
            cluster.shutdown()
        _SHARED.clear()
