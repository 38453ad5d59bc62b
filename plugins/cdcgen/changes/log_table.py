"""What the pipeline must know about one CDC log table before reading it.

Its columns (in schema order, the lake keeps them all), the base table's partition key
(the row checks hash it), the CDC TTL (reads older than it would miss expired rows) and
how the cluster places its partitions (:class:`~cdcgen.changes.settings.LogPartitioner`).
Read once on the Spark driver and shipped to the tasks as this small, picklable record.

Where the TTL lives: ScyllaDB keeps it in the base table's ``cdc`` option
(``system_schema.scylla_tables.cdc['ttl']``); the sandbox emulator, on Apache Cassandra,
records it in its ``sandbox_cdc_tables`` state table.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from cdcgen.changes.settings import ChangesSettings, LogPartitioner
from cdcgen.changes.windows import LOG_SUFFIX, TableRef
from cdcgen.schema import SourceSchema, Table

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient

STREAM_ID = "cdc$stream_id"
TIME = "cdc$time"
BATCH_SEQ_NO = "cdc$batch_seq_no"
OPERATION = "cdc$operation"
END_OF_BATCH = "cdc$end_of_batch"
TTL = "cdc$ttl"
KEY_COLUMNS = (STREAM_ID, TIME, BATCH_SEQ_NO)

SCYLLA_CDC_PARTITIONER = "com.scylladb.dht.CDCPartitioner"
_COLUMN = re.compile(r"^[a-z][a-z0-9_$]{0,96}$")


class LogTableError(Exception):
    """Terminal: the table is not CDC-enabled, or its log does not have ScyllaDB's shape."""


def quote_column(name: str) -> str:
    """A column name for CQL text: allow-listed, then double-quoted (``cdc$...`` needs it)."""
    if not _COLUMN.match(name):
        raise LogTableError(f"unexpected column name {name!r} in a CDC log table")
    return f'"{name}"'


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

    def window_query(self) -> str:
        """The one per-stream query: a single partition, a time slice, never a scan."""
        return (
            f"SELECT {self.select_list} FROM {self.table.qualified_log} "
            f'WHERE "{STREAM_ID}" = ? AND "{TIME}" >= minTimeuuid(?) AND "{TIME}" < minTimeuuid(?)'
        )

    def count_query(self) -> str:
        return (
            f"SELECT COUNT(*) FROM {self.table.qualified_log} "
            f'WHERE "{STREAM_ID}" = ? AND "{TIME}" >= minTimeuuid(?) AND "{TIME}" < minTimeuuid(?)'
        )


def _table_meta(client: CqlClient, keyspace: str, name: str) -> Any:
    cluster = client.cluster
    # A missing table makes the refresh fail; the caller reports it by name.
    with contextlib.suppress(Exception):
        cluster.refresh_table_metadata(keyspace, name)
    ks = cluster.metadata.keyspaces.get(keyspace)
    return None if ks is None else ks.tables.get(name)


def resolve_partitioner(
    client: CqlClient, table: TableRef, wanted: LogPartitioner
) -> LogPartitioner:
    """``auto``: ScyllaDB says ``CDCPartitioner`` in ``system_schema.scylla_tables``;
    a server without that table (Apache Cassandra, the sandbox) hashes with Murmur3.
    """
    if wanted is not LogPartitioner.AUTO:
        return wanted
    from cassandra import InvalidRequest

    try:
        rows = client.execute(
            "SELECT partitioner FROM system_schema.scylla_tables "
            "WHERE keyspace_name = %s AND table_name = %s",
            (table.keyspace, table.log_table),
        )
    except InvalidRequest:
        return LogPartitioner.MURMUR3
    row = rows.one()
    partitioner = getattr(row, "partitioner", None) if row is not None else None
    if partitioner == SCYLLA_CDC_PARTITIONER or partitioner is None:
        # ScyllaDB creates every CDC log with CDCPartitioner; a missing row means the
        # table's metadata is not there yet, and CDC logs have no other partitioner.
        return LogPartitioner.CDC
    return LogPartitioner.MURMUR3


def read_cdc_ttl(
    client: CqlClient, table: TableRef, schema: SourceSchema, default: timedelta
) -> timedelta | None:
    """The table's CDC TTL (``None`` when 0: rows never expire)."""
    from cassandra import InvalidRequest

    seconds: int | None = None
    try:
        row = client.execute(
            "SELECT cdc FROM system_schema.scylla_tables "
            "WHERE keyspace_name = %s AND table_name = %s",
            (table.keyspace, table.table),
        ).one()
        options = getattr(row, "cdc", None) or {}
        if "ttl" in options:
            seconds = int(options["ttl"])
    except InvalidRequest:
        seconds = _sandbox_ttl(client, table, schema)
    if seconds is None:
        return default if default > timedelta(0) else None
    return timedelta(seconds=seconds) if seconds > 0 else None


def _sandbox_ttl(client: CqlClient, table: TableRef, schema: SourceSchema) -> int | None:
    from cassandra import InvalidRequest

    if not schema.keyspace_prefix:
        return None
    keyspace = schema.keyspace(Table.TOPOLOGY)  # the emulator's prefixed ``system``
    try:
        row = client.execute(
            f"SELECT cdc_ttl FROM {keyspace}.sandbox_cdc_tables "
            "WHERE keyspace_name = %s AND table_name = %s",
            (table.keyspace, table.table),
        ).one()
    except InvalidRequest:
        return None
    return None if row is None or row.cdc_ttl is None else int(row.cdc_ttl)


def describe_log_table(
    client: CqlClient, table: TableRef, settings: ChangesSettings, schema: SourceSchema
) -> LogTable:
    """Columns, base partition key, TTL and partitioner of ``table``'s CDC log."""
    log_meta = _table_meta(client, table.keyspace, table.log_table)
    if log_meta is None:
        raise LogTableError(
            f"{table} has no CDC log table {table.qualified_log}: is CDC enabled on it?"
        )
    base_meta = _table_meta(client, table.keyspace, table.table)
    if base_meta is None:
        raise LogTableError(f"base table {table} of {table.qualified_log} does not exist")
    return LogTable(
        table=table,
        columns=tuple(log_meta.columns),
        partition_key=tuple(c.name for c in base_meta.partition_key),
        ttl=read_cdc_ttl(client, table, schema, settings.default_cdc_ttl),
        partitioner=resolve_partitioner(client, table, settings.log_partitioner),
    )


def list_cdc_tables(client: CqlClient, keyspaces: tuple[str, ...] = ()) -> list[TableRef]:
    """Every CDC-enabled base table (optionally only in ``keyspaces``), sorted.

    ScyllaDB: base tables whose ``cdc`` option says enabled. Elsewhere (the sandbox):
    base tables that have a ``<table>_scylla_cdc_log`` next to them.
    """
    from cassandra import InvalidRequest

    found: set[tuple[str, str]] = set()
    try:
        for row in client.execute(
            "SELECT keyspace_name, table_name, cdc FROM system_schema.scylla_tables"
        ):
            if str((row.cdc or {}).get("enabled", "false")).lower() == "true":
                found.add((row.keyspace_name, row.table_name))
    except InvalidRequest:
        names = {
            (row.keyspace_name, row.table_name)
            for row in client.execute("SELECT keyspace_name, table_name FROM system_schema.tables")
        }
        found = {
            (keyspace, name.removesuffix(LOG_SUFFIX))
            for keyspace, name in names
            if name.endswith(LOG_SUFFIX) and (keyspace, name.removesuffix(LOG_SUFFIX)) in names
        }
    tables = []
    for keyspace, name in sorted(found):
        if keyspaces and keyspace not in keyspaces:
            continue
        try:
            tables.append(TableRef(keyspace, name))
        except ValueError:
            continue  # a name this pipeline cannot address safely (quoted identifiers)
    return tables
