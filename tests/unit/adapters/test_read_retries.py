"""Per-stream reads: one query per stream, page-level retries with backoff, error classes."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cassandra import InvalidRequest, ReadTimeout, Unavailable
from cassandra.cluster import NoHostAvailable

from cdcgen.adapters.change_log import CqlChangeLogReader
from cdcgen.adapters.errors import TerminalReadError, TransientReadError, is_transient
from cdcgen.adapters.read_retries import Backoff, ReadStats, with_retries
from cdcgen.changes.job import read_options
from cdcgen.changes.settings import ChangesSettings
from cdcgen.core.cdc_log import LogPartitioner, TableRef, quote_column
from cdcgen.core.errors import LogTableError
from cdcgen.core.log_table import LogTable
from cdcgen.errors import ConfigError

LOG = LogTable(
    table=TableRef("shop", "orders"),
    columns=("cdc$stream_id", "cdc$time", "cdc$batch_seq_no", "cdc$operation", "pk", "v"),
    partition_key=("pk",),
    ttl=timedelta(hours=24),
    partitioner=LogPartitioner.CDC,
)
T0 = datetime(2026, 11, 22, tzinfo=UTC)


def test_window_query_is_one_partition_and_a_time_slice() -> None:
    query = LOG.window_query()
    assert query == (
        'SELECT "cdc$stream_id", timeuuidAsBlob("cdc$time") AS "cdc$time", "cdc$batch_seq_no", '
        '"cdc$operation", "pk", "v" FROM shop.orders_scylla_cdc_log WHERE "cdc$stream_id" = ? '
        'AND "cdc$time" >= minTimeuuid(?) AND "cdc$time" < minTimeuuid(?)'
    )
    assert " IN " not in query and "TOKEN" not in query.upper()
    with pytest.raises(LogTableError):
        quote_column('x" OR 1=1')
    with pytest.raises(LogTableError, match="partition key"):
        LogTable(LOG.table, LOG.columns, ("missing",), None, LogPartitioner.CDC)


def test_errors_are_split_into_transient_and_terminal() -> None:
    assert is_transient(ReadTimeout("slow"))
    assert is_transient(Unavailable("down"))
    assert is_transient(NoHostAvailable("none", {}))
    assert not is_transient(InvalidRequest("bad"))
    assert not is_transient(ValueError("bug"))


def scylla_error(code: int, message: str) -> Exception:
    """What cassandra-driver raises for an ERROR body ``[int code][string message]``."""
    import struct

    from cassandra.protocol import ProtocolHandler

    body = struct.pack(">iH", code, len(message)) + message.encode()
    error = ProtocolHandler.decode_message(4, {}, 1, 0, 0x00, body, None, None)
    assert isinstance(error, Exception)
    return error


def test_scyllas_rate_limit_rejection_is_transient_other_config_errors_are_not() -> None:
    # Without the rate-limit protocol extension (cassandra-driver does not negotiate it),
    # ScyllaDB sends rate_limit_exception's message as a CONFIG_ERROR (0x2300).
    limited = scylla_error(
        0x2300, "Per-partition rate limit reached for read in table shop.orders_scylla_cdc_log, "
        "rejected by replicas"
    )  # fmt: skip
    assert type(limited).__name__ == "ConfigurationException"
    assert is_transient(limited)
    assert not is_transient(scylla_error(0x2300, "Cannot add column to a compact table"))


def test_backoff_grows_exponentially_with_a_cap() -> None:
    backoff = Backoff(6, timedelta(milliseconds=100), timedelta(seconds=1))
    rng = random.Random(0)
    for attempt, ceiling in enumerate([0.1, 0.2, 0.4, 0.8, 1.0, 1.0]):
        assert all(0 <= backoff.delay(attempt, rng) <= ceiling for _ in range(50))


def test_with_retries_retries_transient_then_gives_up_and_fails_terminal_at_once() -> None:
    sleeps: list[float] = []
    calls = iter([ReadTimeout("a"), Unavailable("b"), "ok"])

    def flaky() -> Any:
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    stats = ReadStats()
    assert with_retries(flaky, "read", Backoff(3), stats, sleeps.append) == "ok"
    assert stats.retries == 2 and len(sleeps) == 2

    def always_timeout() -> Any:
        raise ReadTimeout("slow")

    with pytest.raises(TransientReadError, match="after 3 attempts"):
        with_retries(always_timeout, "read s1", Backoff(3), ReadStats(), lambda _: None)

    def invalid() -> Any:
        raise InvalidRequest("no such table")

    sleeps.clear()
    with pytest.raises(TerminalReadError, match="no such table"):
        with_retries(invalid, "read s1", Backoff(3), ReadStats(), sleeps.append)
    assert sleeps == []


class FakePrepared:
    def __init__(self) -> None:
        self.result_metadata: list[Any] = []
        self.fetch_size = None
        self.consistency_level = None
        self.is_idempotent = False

    def bind(self, values: Any) -> tuple[Any, ...]:
        return tuple(values)


class FakeResult:
    def __init__(self, rows: list[Any], paging_state: bytes | None) -> None:
        self.current_rows = rows
        self.paging_state = paging_state


class FakeSession:
    """Serves a stream as pages of 2 rows; fails chosen requests once with a timeout."""

    def __init__(self, rows: list[int], fail_on: set[int]) -> None:
        self.rows = rows
        self.fail_on = fail_on
        self.requests: list[tuple[Any, bytes | None]] = []
        self.prepared: list[str] = []

    def prepare(self, cql: str) -> FakePrepared:
        self.prepared.append(cql)
        return FakePrepared()

    def execute(self, bound: Any, timeout: float = 0, paging_state: bytes | None = None) -> Any:
        number = len(self.requests)
        self.requests.append((bound, paging_state))
        if number in self.fail_on:
            raise ReadTimeout("coordinator timed out")
        offset = int(paging_state or b"0")
        page = self.rows[offset : offset + 2]
        following = offset + 2
        return FakeResult(page, str(following).encode() if following < len(self.rows) else None)


def test_pages_resume_from_the_failed_page_without_rereading_or_skipping() -> None:
    session = FakeSession(list(range(7)), fail_on={2})
    options = read_options(ChangesSettings(page_size=2))
    reader = CqlChangeLogReader(session, LOG, options, sleep=lambda _: None)
    stream = bytes(16)
    pages = list(reader.pages(stream, T0, T0 + timedelta(minutes=1)))
    assert [row for page in pages for row in page] == list(range(7))
    assert [state for _, state in session.requests] == [None, b"2", b"4", b"4", b"6"]
    assert all(bound == (stream, T0, T0 + timedelta(minutes=1)) for bound, _ in session.requests)
    assert reader.stats.retries == 1 and reader.stats.queries == 1 and reader.stats.rows == 7
    assert reader.counters() == {"queries": 1, "retries": 1}
    assert session.prepared == [LOG.window_query()]


def test_settings_validate_and_read_the_environment() -> None:
    settings = ChangesSettings.from_env(
        {
            "CDCGEN_CHANGES_PAGE_SIZE": "100",
            "CDCGEN_CHANGES_LOG_PARTITIONER": "cdc",
            "CDCGEN_CHANGES_EXPIRY_MARGIN_SECONDS": "5",
            "CDCGEN_CHANGES_VERIFY_SOURCE_COUNTS": "no",
        }
    )
    assert settings.page_size == 100 and settings.log_partitioner is LogPartitioner.CDC
    assert settings.expiry_margin == timedelta(seconds=5) and not settings.verify_source_counts
    with pytest.raises(ConfigError, match="LOG_PARTITIONER"):
        ChangesSettings.from_env({"CDCGEN_CHANGES_LOG_PARTITIONER": "random"})
    with pytest.raises(ConfigError, match="READ_CONSISTENCY"):
        ChangesSettings(read_consistency="TWO")


def test_a_last_unavailable_names_the_level_and_the_nodes_down() -> None:
    from cassandra import ConsistencyLevel

    def two_down() -> Any:
        raise Unavailable(
            "Cannot achieve consistency level QUORUM",
            consistency=ConsistencyLevel.QUORUM,
            required_replicas=2,
            alive_replicas=1,
        )

    with pytest.raises(TransientReadError) as failed:
        with_retries(
            two_down,
            "read s1",
            Backoff(2),
            ReadStats(),
            lambda _: None,
            hosts_down=lambda: ["127.0.0.3", "127.0.0.2"],
        )
    assert str(failed.value) == (
        "read s1: still failing after 2 attempts: QUORUM needs 2 replica(s), 1 alive; "
        "nodes down: 127.0.0.2, 127.0.0.3"
    )
