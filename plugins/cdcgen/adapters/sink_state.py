"""A sink's replication state, kept on the sink itself next to the tables it receives.

Three tables in the sink table's keyspace, created on first use::

    cdc_replication_progress ((source_keyspace, source_table), sink_table)
        consistent_until, bootstrapped_at, lake_version, run_id, updated_at
    cdc_replication_rejects ((source_keyspace, source_table, sink_table), write_time,
        cdc_time, batch_seq_no)  stream_id, reason, run_id
    cdc_replication_copy ((source_keyspace, source_table, sink_table), range_end)
        range_start, row_count, run_id, copied_at;
        static: snapshot_at, replaces_rows, started_by, started_at

The copy table holds a bootstrap's copy while it runs (:mod:`cdcgen.core.copy_progress`):
its static cells say which snapshot time it copies at and whether it replaces the sink's
rows, written before anything is truncated or copied; a row per token range is written
once the sink has acknowledged every row of that range. Every write of it carries
``USING TIMESTAMP`` of the snapshot time ``S``, and so does the delete that ends the
copy: that tombstone shadows exactly this copy's cells, whatever the clocks of the
machines that wrote them, and never those of a later copy, whose ``S`` is later (a
bootstrap's ``S`` never goes back: the sink refuses one before its consistency point).

On the sink, because that is where the applied data is: a sink restored from a backup
comes back with the state that matches it, and a second sink of the same table has
state of its own. Like the changes pipeline's checkpoints
(:mod:`cdcgen.adapters.checkpoints`), the consistency point is written ``USING
TIMESTAMP`` of its own value, so it only moves forward whatever the order of racing
writers. (Earlier versions also kept per-stream checkpoints in
``cdc_replication_streams``; a run no longer reads them: it resumes from the
consistency point, which moves after every applied slice.)
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.change_batch import ChangeId
from cdcgen.core.copy_progress import CopiedRange, CopyProgress
from cdcgen.core.replication_plan import SinkProgress
from cdcgen.core.time import from_micros, naive_as_utc, to_micros
from cdcgen.core.token_ranges import TokenRange

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient

PROGRESS = "cdc_replication_progress"
REJECTS = "cdc_replication_rejects"
COPY = "cdc_replication_copy"
DDL_TIMEOUT = 120.0
_DDL = {
    PROGRESS: (
        "source_keyspace text, source_table text, sink_table text, "
        "consistent_until timestamp, bootstrapped_at timestamp, lake_version bigint, "
        "run_id text, updated_at timestamp, "
        "PRIMARY KEY ((source_keyspace, source_table), sink_table)"
    ),
    REJECTS: (
        "source_keyspace text, source_table text, sink_table text, write_time timestamp, "
        "cdc_time text, batch_seq_no int, stream_id blob, reason text, run_id text, "
        "PRIMARY KEY ((source_keyspace, source_table, sink_table), write_time, cdc_time, "
        "batch_seq_no)"
    ),
    COPY: (
        "source_keyspace text, source_table text, sink_table text, range_end bigint, "
        "range_start bigint, row_count bigint, run_id text, copied_at timestamp, "
        "snapshot_at timestamp static, replaces_rows boolean static, started_by text static, "
        "started_at timestamp static, "
        "PRIMARY KEY ((source_keyspace, source_table, sink_table), range_end)"
    ),
}


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else naive_as_utc(value)


class CqlSinkState:
    """The state of ``source`` replicated into ``sink``, through the sink's client
    (:class:`cdcgen.ports.SinkState`)."""

    def __init__(self, client: CqlClient, source: TableRef, sink: TableRef) -> None:
        self._client = client
        self.source = source
        self.sink = sink

    def _name(self, table: str) -> str:
        return f"{self.sink.keyspace}.{table}"

    def ensure_schema(self) -> None:
        """Create the state tables in the sink's keyspace; cheap when they exist."""
        keyspace = self._client.cluster.metadata.keyspaces.get(self.sink.keyspace)
        if keyspace is not None and all(t in keyspace.tables for t in _DDL):
            return
        for table, columns in _DDL.items():
            cql = f"CREATE TABLE IF NOT EXISTS {self._name(table)} ({columns})"
            self._client.session.execute(cql, timeout=DDL_TIMEOUT)

    def exists(self) -> bool:
        """Whether the sink's keyspace holds the state tables (a dry run creates none)."""
        keyspace = self._client.cluster.metadata.keyspaces.get(self.sink.keyspace)
        return keyspace is not None and PROGRESS in keyspace.tables

    @property
    def _key(self) -> tuple[str, str, str]:
        return (self.source.keyspace, self.source.table, self.sink.qualified)

    def progress(self) -> SinkProgress:
        statement = self._client.prepared(
            "SELECT consistent_until, bootstrapped_at, lake_version, run_id, updated_at "
            f"FROM {self._name(PROGRESS)} "
            "WHERE source_keyspace = ? AND source_table = ? AND sink_table = ?"
        )
        row = self._client.execute_retried(statement, self._key).one()
        if row is None:
            return SinkProgress(self.source, self.sink)
        return SinkProgress(
            self.source,
            self.sink,
            _utc(row.consistent_until),
            _utc(row.bootstrapped_at),
            row.lake_version,
            row.run_id or "",
            _utc(row.updated_at),
        )

    def save_progress(
        self,
        consistent_until: datetime,
        run_id: str,
        lake_version: int | None = None,
        bootstrapped_at: datetime | None = None,
    ) -> None:
        """Move the consistency point forward (an older one is ignored)."""
        stamp = to_micros(consistent_until)
        sets = "consistent_until = ?, lake_version = ?, run_id = ?, updated_at = ?"
        values: list[Any] = [consistent_until, lake_version, run_id, datetime.now(UTC)]
        if bootstrapped_at is not None:
            sets += ", bootstrapped_at = ?"
            values.append(bootstrapped_at)
        statement = self._client.prepared(
            f"UPDATE {self._name(PROGRESS)} USING TIMESTAMP ? SET {sets} "
            "WHERE source_keyspace = ? AND source_table = ? AND sink_table = ?"
        )
        self._client.execute_retried(statement, (stamp, *values, *self._key))

    def reject(self, change: ChangeId, reason: str, run_id: str) -> None:
        """Record a change that could not be applied (before the consistency point passes it)."""
        statement = self._client.prepared(
            f"INSERT INTO {self._name(REJECTS)} (source_keyspace, source_table, sink_table, "
            "write_time, cdc_time, batch_seq_no, stream_id, reason, run_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        values = (
            from_micros(change.write_time_us), change.cdc_time, change.batch_seq_no,
            change.stream_id, reason, run_id,
        )  # fmt: skip
        self._client.execute_retried(statement, (*self._key, *values))

    # --- a bootstrap's copy ------------------------------------------------------------

    def start_copy(self, snapshot_at: datetime, truncate: bool, run_id: str) -> None:
        """Record a copy at ``snapshot_at`` before it truncates or copies anything."""
        statement = self._client.prepared(
            f"UPDATE {self._name(COPY)} USING TIMESTAMP ? SET snapshot_at = ?, replaces_rows = ?, "
            "started_by = ?, started_at = ? "
            "WHERE source_keyspace = ? AND source_table = ? AND sink_table = ?"
        )
        values = (to_micros(snapshot_at), snapshot_at, truncate, run_id, datetime.now(UTC))
        self._client.execute_retried(statement, (*values, *self._key))

    def copy_progress(self) -> CopyProgress | None:
        """The unfinished copy into the sink table, or None (also before the state tables
        exist: a dry run creates none)."""
        keyspace = self._client.cluster.metadata.keyspaces.get(self.sink.keyspace)
        if keyspace is None or COPY not in keyspace.tables:
            return None
        statement = self._client.prepared(
            "SELECT snapshot_at, replaces_rows, started_by, range_start, range_end, row_count, "
            "run_id "
            f"FROM {self._name(COPY)} "
            "WHERE source_keyspace = ? AND source_table = ? AND sink_table = ?"
        )
        rows = list(self._client.execute_retried(statement, self._key))
        if not rows or rows[0].snapshot_at is None:
            return None
        head = rows[0]
        done = tuple(
            CopiedRange(TokenRange(r.range_start, r.range_end), r.row_count or 0, r.run_id or "")
            for r in rows
            if r.range_end is not None and r.range_start is not None
        )
        return CopyProgress(
            naive_as_utc(head.snapshot_at), bool(head.replaces_rows), head.started_by or "", done
        )

    def record_copied_range(
        self, snapshot_at: datetime, tokens: TokenRange, rows: int, run_id: str
    ) -> None:
        """Record ``tokens`` as copied (call once the sink acknowledged all its rows)."""
        statement = self._client.prepared(
            f"INSERT INTO {self._name(COPY)} (source_keyspace, source_table, sink_table, "
            "range_end, range_start, row_count, run_id, copied_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
        )
        values = (tokens.high, tokens.low, rows, run_id, datetime.now(UTC))
        self._client.execute_retried(statement, (*self._key, *values, to_micros(snapshot_at)))

    def end_copy(self, snapshot_at: datetime) -> None:
        """Remove the copy at ``snapshot_at`` (finished, or abandoned for a new one)."""
        statement = self._client.prepared(
            f"DELETE FROM {self._name(COPY)} USING TIMESTAMP ? "
            "WHERE source_keyspace = ? AND source_table = ? AND sink_table = ?"
        )
        self._client.execute_retried(statement, (to_micros(snapshot_at), *self._key))


class CqlSinkStates:
    """Each replicated table's state, on the sink (:class:`cdcgen.ports.SinkStates`)."""

    def __init__(self, client: CqlClient) -> None:
        self._client = client

    def state(self, source: TableRef, sink: TableRef) -> CqlSinkState:
        return CqlSinkState(self._client, source, sink)
