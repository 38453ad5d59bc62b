"""Bucket checkpoints and each table's consistency watermark, in the state keyspace.

Two tables, created on first use::

    cdc_bucket_checkpoints ((keyspace_name, table_name), generation, bucket)
        checkpoint, window_start, run_id, updated_at, lake_version
    cdc_table_progress ((keyspace_name, table_name))
        started_at, watermark, watermark_updated_at, run_id, lake_version, rebootstrapped_at,
        cdc_ttl_before, cdc_ttl_seen, cdc_ttl_since

A bucket's checkpoint is the time up to which the rows of every stream of that lake
bucket (in that generation) are durably in the lake; it is written only after the Spark
job that wrote them committed, with that commit's table version (``lake_version``; the
watermark's holds everything up to it). Buckets are numbered as the lake records them,
so a row per generation and bucket is all the state a table has, whatever its stream
count. The watermark is YugabyteDB's "data consistency timestamp" for the table: every
stream is in the lake up to it (:func:`cdcgen.core.watermark.consistency_watermark`).

Writes are idempotent and only move forward, even when two writers race (a backfill
next to the scheduled run) and without lightweight transactions: each checkpoint and
watermark cell is written ``USING TIMESTAMP`` of its own value in microseconds, so
Cassandra's last-write-wins keeps the largest value whatever the order. ``started_at``
uses the mirror image (``2^62 - value``) so the earliest start wins. The ``cdc_ttl_*``
cells (what the runs know of the TTLs of the log rows after the watermark:
:class:`cdcgen.core.log_ttls.LogTtls`) are written with the watermark's timestamp, so a
newer watermark brings its run's record. At the same watermark the cautious value must
win, and Cassandra and ScyllaDB keep the larger of two cells with equal timestamps: the
later ``since``, and the shorter TTL, which is why TTLs are stored mirrored
(``2^31 - 1 - seconds``; 0 for no TTL, which loses to any). A consequence of
value-derived write timestamps: state cannot be reset with a plain ``DELETE`` (later
writes of older values would stay shadowed); start a table afresh under another target
keyspace instead, or move it forward with :meth:`CqlCheckpointStore.advance_watermark`.
Rows of generations entirely before the watermark can be pruned
(:meth:`CqlCheckpointStore.prune`): the watermark already implies them, which keeps the
state from growing without bound.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.identifiers import STATE_KEYSPACE_SETTING as STATE
from cdcgen.core.identifiers import check_writable_keyspace
from cdcgen.core.log_ttls import LogTtls
from cdcgen.core.time import naive_as_utc, to_micros
from cdcgen.core.watermark import BucketCheckpoint, TableProgress
from cdcgen.core.windows import GenerationSpan, TableState
from cdcgen.schema import create_keyspace_cql

if TYPE_CHECKING:
    from cassandra.metadata import TableMetadata

    from cdcgen.adapters.cql import CqlClient

CHECKPOINTS_TABLE = "cdc_bucket_checkpoints"
PROGRESS_TABLE = "cdc_table_progress"
_MIRROR = 1 << 62
DDL_TIMEOUT = 120.0

_DDL = {
    CHECKPOINTS_TABLE: (
        "keyspace_name text, table_name text, generation timestamp, bucket int, "
        "checkpoint timestamp, window_start timestamp, run_id text, updated_at timestamp, "
        "lake_version bigint, PRIMARY KEY ((keyspace_name, table_name), generation, bucket)"
    ),
    PROGRESS_TABLE: (
        "keyspace_name text, table_name text, started_at timestamp, watermark timestamp, "
        "watermark_updated_at timestamp, run_id text, lake_version bigint, "
        "rebootstrapped_at timestamp, cdc_ttl_before int, cdc_ttl_seen int, "
        "cdc_ttl_since timestamp, PRIMARY KEY ((keyspace_name, table_name))"
    ),
}

#: Columns later versions added, as ``(table, column, type)``.
_ADDED_COLUMNS = (
    (CHECKPOINTS_TABLE, "lake_version", "bigint"),
    (PROGRESS_TABLE, "lake_version", "bigint"),
    (PROGRESS_TABLE, "rebootstrapped_at", "timestamp"),
    (PROGRESS_TABLE, "cdc_ttl_before", "int"),
    (PROGRESS_TABLE, "cdc_ttl_seen", "int"),
    (PROGRESS_TABLE, "cdc_ttl_since", "timestamp"),
)


_PROGRESS_COLUMNS = (
    "started_at, watermark, watermark_updated_at, run_id, lake_version, rebootstrapped_at, "
    "cdc_ttl_before, cdc_ttl_seen, cdc_ttl_since"
)
#: TTLs are stored as this minus their seconds (see the module doc).
_TTL_MIRROR = (1 << 31) - 1


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else naive_as_utc(value)


def _stored_ttl(seconds: int) -> int:
    return 0 if seconds == 0 else _TTL_MIRROR - seconds


def _ttl_of(stored: int) -> int:
    return 0 if stored == 0 else _TTL_MIRROR - stored


def _log_ttls(row: Any) -> LogTtls | None:
    if row.cdc_ttl_since is None or row.cdc_ttl_before is None or row.cdc_ttl_seen is None:
        return None
    return LogTtls(
        _ttl_of(row.cdc_ttl_before), _ttl_of(row.cdc_ttl_seen), naive_as_utc(row.cdc_ttl_since)
    )


def _progress(row: Any) -> TableProgress:
    return TableProgress(
        TableRef(row.keyspace_name, row.table_name),
        _utc(row.started_at),
        _utc(row.watermark),
        _utc(row.watermark_updated_at),
        row.run_id or "",
        row.lake_version,
        _utc(row.rebootstrapped_at),
        _log_ttls(row),
    )


class CqlCheckpointStore:
    """Reads and writes the state tables through a connected :class:`CqlClient`."""

    def __init__(self, client: CqlClient, keyspace: str) -> None:
        self._client = client
        self._keyspace = check_writable_keyspace(keyspace, "state keyspace", setting=STATE)

    def _name(self, table: str) -> str:
        return f"{self._keyspace}.{table}"

    def ensure_schema(self, replication: Mapping[str, str | int] | None = None) -> None:
        """Create the keyspace (if absent) and both tables; cheap when they exist.

        Schema changes are slow on a loaded node, so they get a long timeout, and are
        skipped altogether when the driver's metadata already has the tables.
        """
        from cassandra.query import SimpleStatement

        keyspace = self._client.cluster.metadata.keyspaces.get(self._keyspace)
        if keyspace is not None and all(t in keyspace.tables for t in _DDL):
            self._add_missing_columns(keyspace.tables)
            return
        if replication is None:
            factor = min(3, max(1, self._client.node_count))
            replication = {"class": "SimpleStrategy", "replication_factor": factor}
        statements = [
            create_keyspace_cql(self._keyspace, replication),
            *(
                f"CREATE TABLE IF NOT EXISTS {self._name(table)} ({columns})"
                for table, columns in _DDL.items()
            ),
        ]
        for cql in statements:
            self._client.session.execute(SimpleStatement(cql), timeout=DDL_TIMEOUT)

    def _add_missing_columns(self, tables: Mapping[str, TableMetadata]) -> None:
        """Tables created by an earlier version lack the columns added since: add them
        (another run adding the same column at the same moment is no error)."""
        from cassandra import InvalidRequest

        for table, column, kind in _ADDED_COLUMNS:
            if column not in tables[table].columns:
                cql = f"ALTER TABLE {self._name(table)} ADD {column} {kind}"
                try:
                    self._client.session.execute(cql, timeout=DDL_TIMEOUT)
                except InvalidRequest as refused:  # Cassandra: "conflicts with an existing
                    if "exist" not in str(refused):  # column"; ScyllaDB: "already exists"
                        raise

    def _read_progress(self, cql: str, values: tuple[Any, ...] = ()) -> list[Any]:
        """Rows of the progress table; a table an earlier version created first gains the
        columns added since (a reader may come before any changes run after an upgrade)."""
        from cassandra import InvalidRequest

        try:
            return list(self._client.session.execute(self._client.prepared(cql), values))
        except InvalidRequest as refused:
            # Cassandra: "Undefined column name x"; ScyllaDB: "Undefined name x in selection".
            if not any(f"Undefined {n}name" in str(refused) for n in ("column ", "")):
                raise
        self._client.cluster.refresh_schema_metadata()
        self.ensure_schema()
        return list(self._client.session.execute(self._client.prepared(cql), values))

    # --- reads -------------------------------------------------------------------------

    def checkpoints(self, table: TableRef) -> list[BucketCheckpoint]:
        statement = self._client.prepared(
            "SELECT generation, bucket, checkpoint, window_start, run_id, updated_at, "
            f"lake_version FROM {self._name(CHECKPOINTS_TABLE)} "
            "WHERE keyspace_name = ? AND table_name = ?"
        )
        rows = self._client.session.execute(statement, (table.keyspace, table.table))
        return [
            BucketCheckpoint(
                generation=naive_as_utc(row.generation),
                bucket=row.bucket,
                checkpoint=naive_as_utc(row.checkpoint),
                window_start=_utc(row.window_start),
                run_id=row.run_id or "",
                updated_at=_utc(row.updated_at),
                lake_version=row.lake_version,
            )
            for row in rows
            if row.checkpoint is not None
        ]

    def progress(self, table: TableRef) -> TableProgress:
        """The table's progress; none while nothing was ever saved. Only a save creates
        the state tables, so a bootstrap asked for before any changes run reads none (and
        says which DAG to run first) instead of failing on a missing keyspace."""
        from cassandra import InvalidRequest

        try:
            rows = self._read_progress(
                f"SELECT keyspace_name, table_name, {_PROGRESS_COLUMNS} "
                f"FROM {self._name(PROGRESS_TABLE)} WHERE keyspace_name = ? AND table_name = ?",
                (table.keyspace, table.table),
            )
        except InvalidRequest as refused:
            # Cassandra: "keyspace/table ... does not exist"; ScyllaDB: "unconfigured table".
            message = str(refused)
            if "does not exist" in message or "unconfigured table" in message:
                return TableProgress(table, None, None, None, "")
            raise
        return _progress(rows[0]) if rows else TableProgress(table, None, None, None, "")

    def all_progress(self) -> list[TableProgress]:
        """Every table's progress (the report's and users' overview)."""
        rows = self._read_progress(
            f"SELECT keyspace_name, table_name, {_PROGRESS_COLUMNS} "
            f"FROM {self._name(PROGRESS_TABLE)}"
        )
        return sorted(map(_progress, rows), key=lambda p: p.table.qualified)

    def table_state(self, table: TableRef) -> TableState:
        """Progress and checkpoints as the window planner wants them."""
        progress = self.progress(table)
        return TableState(
            started_at=progress.started_at,
            watermark=progress.watermark,
            checkpoints={(c.generation, c.bucket): c.checkpoint for c in self.checkpoints(table)},
            log_ttls=progress.log_ttls,
        )

    # --- writes ------------------------------------------------------------------------

    def record_start(self, table: TableRef, started_at: datetime, run_id: str = "") -> None:
        """Where extraction of ``table`` begins; the earliest recorded start wins."""
        statement = self._client.prepared(
            f"UPDATE {self._name(PROGRESS_TABLE)} USING TIMESTAMP ? SET started_at = ? "
            "WHERE keyspace_name = ? AND table_name = ?"
        )
        stamp = _MIRROR - to_micros(started_at)
        self._client.session.execute(statement, (stamp, started_at, table.keyspace, table.table))

    def save(
        self,
        table: TableRef,
        checkpoints: Iterable[BucketCheckpoint],
        *,
        concurrency: int = 16,
    ) -> int:
        """Upsert checkpoints (never moving one back); returns how many were written.

        A run saves one row per generation and bucket it wrote, a few in flight; each
        keeps its own ``USING TIMESTAMP``, so a late, older write never moves one back."""
        from cassandra.concurrent import execute_concurrent_with_args

        statement = self._client.prepared(
            f"UPDATE {self._name(CHECKPOINTS_TABLE)} USING TIMESTAMP ? "
            "SET checkpoint = ?, window_start = ?, run_id = ?, updated_at = ?, lake_version = ? "
            "WHERE keyspace_name = ? AND table_name = ? AND generation = ? AND bucket = ?"
        )
        now = datetime.now(UTC)
        params = [
            (to_micros(c.checkpoint), c.checkpoint, c.window_start, c.run_id, now,
             c.lake_version, table.keyspace, table.table, c.generation, c.bucket)
            for c in checkpoints
        ]  # fmt: skip
        if params:
            execute_concurrent_with_args(
                self._client.session, statement, params, concurrency=concurrency,
                raise_on_first_error=True,
            )  # fmt: skip
        return len(params)

    def save_watermark(
        self,
        table: TableRef,
        watermark: datetime,
        run_id: str = "",
        lake_version: int | None = None,
        log_ttls: LogTtls | None = None,
    ) -> None:
        """Store a newer watermark with the lake version that holds it and what its run
        knows of the TTLs of the log rows after it (None records nothing); an older one
        is ignored (the write timestamp decides, for every cell alike)."""
        ttl = (
            "" if log_ttls is None else ", cdc_ttl_before = ?, cdc_ttl_seen = ?, cdc_ttl_since = ?"
        )
        statement = self._client.prepared(
            f"UPDATE {self._name(PROGRESS_TABLE)} USING TIMESTAMP ? "
            f"SET watermark = ?, watermark_updated_at = ?, run_id = ?, lake_version = ?{ttl} "
            "WHERE keyspace_name = ? AND table_name = ?"
        )
        values: tuple[Any, ...] = (
            to_micros(watermark),
            watermark,
            datetime.now(UTC),
            run_id,
            lake_version,
        )
        if log_ttls is not None:
            before, seen = _stored_ttl(log_ttls.before), _stored_ttl(log_ttls.seen)
            values += (before, seen, log_ttls.since)
        self._client.session.execute(statement, (*values, table.keyspace, table.table))

    def advance_watermark(self, table: TableRef, to: datetime, run_id: str = "rebootstrap") -> None:
        """Re-bootstrap: declare everything before ``to`` in the lake (from a snapshot).

        Every stream then resumes from ``to`` at least. Only moves forward. ``to`` is
        also recorded as ``rebootstrapped_at``: the lake has no changes of the gap, which
        replication to a sink consistent before it must not skip silently. What the runs
        recorded of the TTLs is forgotten (no TTL known, since ``to``): it was about rows
        before ``to``, and kept, a TTL raise would fail the next run again.
        """
        self.save_watermark(table, to, run_id, log_ttls=LogTtls(0, 0, to))
        statement = self._client.prepared(
            f"UPDATE {self._name(PROGRESS_TABLE)} USING TIMESTAMP ? SET rebootstrapped_at = ? "
            "WHERE keyspace_name = ? AND table_name = ?"
        )
        self._client.session.execute(statement, (to_micros(to), to, table.keyspace, table.table))

    def prune(self, table: TableRef, generations: Sequence[GenerationSpan]) -> int:
        """Delete checkpoint rows of generations that end at or before the watermark."""
        watermark = self.progress(table).watermark
        if watermark is None:
            return 0
        statement = self._client.prepared(
            f"DELETE FROM {self._name(CHECKPOINTS_TABLE)} USING TIMESTAMP ? "
            "WHERE keyspace_name = ? AND table_name = ? AND generation = ?"
        )
        pruned = 0
        for generation in generations:
            if generation.end is None or generation.end > watermark:
                continue
            self._client.session.execute(
                statement,
                (to_micros(generation.end), table.keyspace, table.table, generation.start),
            )
            pruned += 1
        return pruned
