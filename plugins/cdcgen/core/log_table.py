"""What a reader must know about one CDC log table: its columns, key, TTL and partitioner.

Its columns (in schema order, the lake keeps them all), the base table's partition key
(the row checks hash it), the CDC TTL (reads older than it would miss expired rows) and
how the cluster places its partitions (:class:`~cdcgen.core.cdc_log.LogPartitioner`).
Read once on the Spark driver (:func:`cdcgen.adapters.log_tables.describe_log_table`)
and shipped to the tasks as this small, picklable record, which also writes the only
queries the pipeline sends to a log table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from cdcgen.core.cdc_log import (
    KEY_COLUMNS,
    OPERATION,
    STREAM_ID,
    TIME,
    LogPartitioner,
    TableRef,
    quote_column,
)
from cdcgen.core.errors import LogTableError

_TOKEN = f'token("{STREAM_ID}")'
_RANGE = (
    f'WHERE {_TOKEN} > ? AND {_TOKEN} <= ? AND "{TIME}" >= minTimeuuid(?) '
    f'AND "{TIME}" < minTimeuuid(?) ALLOW FILTERING'
)
_WINDOW = f'WHERE "{STREAM_ID}" = ? AND "{TIME}" >= minTimeuuid(?) AND "{TIME}" < minTimeuuid(?)'


@dataclass(frozen=True)
class LogTable:
    table: TableRef
    columns: tuple[str, ...]
    partition_key: tuple[str, ...]
    ttl: timedelta | None
    partitioner: LogPartitioner

    def __post_init__(self) -> None:
        missing = [c for c in (*KEY_COLUMNS, OPERATION) if c not in self.columns]
        if missing:
            raise LogTableError(f"{self.table.qualified_log} lacks log columns {missing}")
        absent = [c for c in self.partition_key if c not in self.columns]
        if not self.partition_key or absent:
            raise LogTableError(
                f"{self.table.qualified_log} does not carry the base partition key "
                f"{list(self.partition_key)} (missing {absent})"
            )
        if self.partitioner is LogPartitioner.AUTO:
            raise LogTableError("resolve the log partitioner before describing the table")

    @property
    def select_list(self) -> str:
        return ", ".join(quote_column(c) for c in self.columns)

    @property
    def read_list(self) -> str:
        """:attr:`select_list` with ``cdc$time`` as its 16 bytes (``timeuuidAsBlob``, in
        ScyllaDB and Cassandra alike), under its own name: the lake derives its text and
        write time from the bytes, and the driver's UUID objects, built for every row
        and then thrown away, were most of the driver's decoding time."""
        time_blob = f'timeuuidAsBlob("{TIME}") AS "{TIME}"'
        return ", ".join(time_blob if c == TIME else quote_column(c) for c in self.columns)

    def window_query(self) -> str:
        """The one per-stream query: a single partition, a time slice, never a scan."""
        return f"SELECT {self.read_list} FROM {self.table.qualified_log} {_WINDOW}"

    def count_query(self) -> str:
        """``COUNT(*)`` of the same slice, computed by the source (the row checks' truth)."""
        return f"SELECT COUNT(*) FROM {self.table.qualified_log} {_WINDOW}"

    def range_query(self, *, keys_only: bool = False) -> str:
        """The scan of the range strategy: a token range of the ring, a time slice.

        The time bounds restrict a clustering column without the partition key, which
        both Cassandra and ScyllaDB accept only with ``ALLOW FILTERING``; each replica
        then skips the rows outside the slice of every partition it scans instead of
        shipping them. ``token()`` is the table's own partitioner's (Murmur3, or
        ScyllaDB's CDC partitioner), so the ranges of the cluster's token map cover
        every partition exactly once. ``keys_only`` selects the stream and time alone
        (the row checks' source counts)."""
        columns = f'"{STREAM_ID}", timeuuidAsBlob("{TIME}")' if keys_only else self.read_list
        return f"SELECT {columns} FROM {self.table.qualified_log} {_RANGE}"
