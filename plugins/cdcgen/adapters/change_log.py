"""Read one stream's window of a CDC log table: the :class:`~cdcgen.ports.ChangeLogReader`
over cassandra-driver.

Two query shapes: a single partition's time slice (the per-stream strategy)::

    SELECT ... WHERE "cdc$stream_id" = ? AND "cdc$time" >= minTimeuuid(?)
                 AND "cdc$time" < minTimeuuid(?)

and a token range's time slice (the range strategy, :meth:`LogTable.range_query`).

Each page is its own request, resumed from the previous page's paging state, so a page
that times out is re-requested alone (:func:`~cdcgen.adapters.read_retries.with_retries`):
nothing before it is read twice and nothing after it is skipped.

Spark tasks do not receive a reader (a driver session cannot be pickled) but a
:class:`CqlReaderFactory`, a small record that opens the worker's shared session
(:func:`~cdcgen.adapters.read_sessions.shared_session`) and builds the reader there.
Tests wrap the factory to make a task fail part-way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.errors import hosts_down
from cdcgen.adapters.read_retries import Backoff, ReadStats, with_retries
from cdcgen.adapters.read_sessions import SessionKey, shared_session
from cdcgen.adapters.stream_routing import host_name
from cdcgen.core.log_table import LogTable

if TYPE_CHECKING:
    from cassandra.cluster import Session


@dataclass(frozen=True)
class ReadOptions:
    """How the reader pages, waits and retries (from ``CDCGEN_CHANGES_*`` settings)."""

    page_size: int = 5000
    request_timeout: timedelta = timedelta(seconds=30)
    consistency: str = "QUORUM"  # a ConsistencyLevel name
    backoff: Backoff = field(default_factory=Backoff)


class CqlChangeLogReader:
    """Reads windows of single streams of one CDC log table."""

    def __init__(
        self,
        session: Session,
        log_table: LogTable,
        options: ReadOptions,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        from cassandra import ConsistencyLevel

        self._session = session
        self._log_table = log_table
        self._backoff = options.backoff
        self._sleep = sleep
        self._timeout = options.request_timeout.total_seconds()
        self._consistency = getattr(ConsistencyLevel, options.consistency)
        self.stats = ReadStats()
        self._statement = self._prepare(log_table.window_query())
        self._statement.fetch_size = options.page_size
        self._count_statement: Any = None
        self._range_statements: dict[bool, Any] = {}
        self._page_size = options.page_size

    def _retried(self, call: Callable[[], Any], what: str) -> Any:
        """``call`` with the read's retries; a last ``Unavailable`` names the nodes down."""
        return with_retries(
            call,
            what,
            self._backoff,
            self.stats,
            self._sleep,
            hosts_down=lambda: hosts_down(self._session.cluster),
        )

    def _prepare(self, cql: str) -> Any:
        statement = self._retried(
            lambda: self._session.prepare(cql), f"prepare {self._log_table.table.qualified_log}"
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

    def counters(self) -> Mapping[str, int]:
        return {"queries": self.stats.queries, "retries": self.stats.retries}

    def pages(self, stream: bytes, start: datetime, end: datetime) -> Iterator[list[Any]]:
        """The rows of ``stream`` with ``start <= cdc$time < end``, one list per page.

        Rows come in clustering order (``cdc$time``, ``cdc$batch_seq_no``): a key's
        changes in the order they were written.
        """
        bound = self._statement.bind((stream, start, end))
        what = f"{self._log_table.table.qualified_log} stream {stream.hex()} [{start}, {end})"
        return self._paged(bound, what, None)

    def range_pages(
        self,
        low: int,
        high: int,
        start: datetime,
        end: datetime,
        replica: str | None = None,
        *,
        keys_only: bool = False,
    ) -> Iterator[list[Any]]:
        """The rows of every stream with ``low < token <= high`` and ``start <= cdc$time <
        end``, one list per page, sent to ``replica`` (an address) when it is up;
        ``keys_only``: ``(cdc$stream_id, cdc$time)`` only.

        Partitions come in token order, each one's rows in clustering order."""
        statement = self._range_statements.get(keys_only)
        if statement is None:
            statement = self._prepare(self._log_table.range_query(keys_only=keys_only))
            statement.fetch_size = self._page_size
            self._range_statements[keys_only] = statement
        bound = statement.bind((low, high, start, end))
        what = f"{self._log_table.table.qualified_log} tokens ({low}, {high}] [{start}, {end})"
        return self._paged(bound, what, self._host(replica))

    def _host(self, address: str | None) -> Any:
        if address is None:
            return None
        for host in self._session.cluster.metadata.all_hosts():
            if host_name(host) == address and host.is_up:
                return host
        return None

    def _paged(self, bound: Any, what: str, host: Any) -> Iterator[list[Any]]:
        paging_state: bytes | None = None
        self.stats.queries += 1
        while True:
            result = self._retried(self._page_call(bound, paging_state, host), what)
            rows = list(result.current_rows)
            self.stats.pages += 1
            self.stats.rows += len(rows)
            yield rows
            paging_state = result.paging_state
            if not paging_state:
                return

    def _page_call(self, bound: Any, paging_state: bytes | None, host: Any) -> Callable[[], Any]:
        extra = {} if host is None else {"host": host}
        return lambda: self._session.execute(
            bound, timeout=self._timeout, paging_state=paging_state, **extra
        )

    def count(self, stream: bytes, start: datetime, end: datetime) -> int:
        """``COUNT(*)`` of the same window, computed by the server (the row checks' source)."""
        if self._count_statement is None:
            self._count_statement = self._prepare(self._log_table.count_query())
        bound = self._count_statement.bind((stream, start, end))
        what = f"count {self._log_table.table.qualified_log} stream {stream.hex()}"
        result = self._retried(lambda: self._session.execute(bound, timeout=self._timeout), what)
        self.stats.queries += 1
        return int(result.one()[0])


@dataclass(frozen=True)
class CqlReaderFactory:
    """Builds a reader in a Spark task, on the worker's shared routed session. Picklable."""

    session: SessionKey
    log_table: LogTable
    options: ReadOptions

    def __call__(self) -> CqlChangeLogReader:
        return CqlChangeLogReader(shared_session(self.session), self.log_table, self.options)
