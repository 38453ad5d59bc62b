"""Publish generations to the user-facing description tables, the way ScyllaDB does.

Contract (design doc section 5): every row of ``cdc_streams_descriptions_v2`` first,
then, only after all of them succeeded, the ``cdc_generation_timestamps`` row. A client
reads a generation's streams only after it sees the timestamp, so a crash in between
leaves nothing visible, and a re-run completes the same rows (idempotent). Rows go in
unlogged single-partition batches of about 1 MB (all rows of a generation share the
partition key ``time``, so a batch is one atomic mutation), at most ``publish_concurrency``
(20) in flight, at the client's metadata consistency (QUORUM on a multi-node cluster).

A generation already (even partly) published with *different* streams is refused with
:class:`PublishConflict`: a description is never silently overwritten.

Also here: the tablets views (``cdc_timestamps`` / ``cdc_streams``, shaped like
ScyllaDB's virtual tables), :meth:`CqlDescriptionPublisher.expire_superseded` (the seed's
TODO) and the V1 -> V2 rewrite (:meth:`CqlDescriptionPublisher.rewrite_v1`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.publication_rules import (
    DEFAULT_BATCH_BYTES,
    CdcTable,
    Expiry,
    batches_by_size,
    expirations,
    generations_to_rewrite,
)
from cdcgen.core.timeline import generation_timestamp
from cdcgen.core.topology import TopologyDescription
from cdcgen.progress import Progress
from cdcgen.schema import (
    CDC_LOCAL_REWRITTEN_KEY,
    GENERATION_TIMESTAMPS_KEY,
    SourceSchema,
    Table,
    check_identifier,
    create_table_cql,
)

if TYPE_CHECKING:
    from cassandra.query import PreparedStatement

    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig
    from cdcgen.core.tablets import StreamSetView

log = logging.getLogger(__name__)

SCYLLA_KEYSPACE = "system_distributed"
"""ScyllaDB's own keyspace: its tables exist already and must never be created by us."""

#: Batches per progress step (a batch is up to ~1 MB of ranges).
PROGRESS_SLICE = 32

FAULT_ENV = "CDCGEN_FAULT_PUBLISH"
"""Set to ``crash-after-streams`` to fail between the streams rows and the timestamp row."""
FAULT_CRASH_AFTER_STREAMS = "crash-after-streams"

STREAMS_V2 = Table.CDC_STREAMS_DESCRIPTIONS_V2.name_only
TIMESTAMPS = Table.CDC_GENERATION_TIMESTAMPS.name_only
TABLET_TIMESTAMPS = "cdc_timestamps"
TABLET_STREAMS = "cdc_streams"

# ScyllaDB's virtual tables system.cdc_timestamps / system.cdc_streams, as real tables:
# name -> (columns and key, table options).
TABLET_TABLES: Mapping[str, tuple[str, str]] = {
    TABLET_TIMESTAMPS: (
        "keyspace_name text, table_name text, timestamp timestamp, "
        "PRIMARY KEY ((keyspace_name, table_name), timestamp)",
        "CLUSTERING ORDER BY (timestamp DESC)",
    ),
    TABLET_STREAMS: (
        "keyspace_name text, table_name text, timestamp timestamp, stream_state tinyint, "
        "stream_id blob, "
        "PRIMARY KEY ((keyspace_name, table_name), timestamp, stream_state, stream_id)",
        "CLUSTERING ORDER BY (timestamp ASC, stream_state ASC, stream_id ASC)",
    ),
}

StreamRows = Sequence[tuple[int, Sequence[bytes]]]


class PublishError(Exception):
    """Base class of publication failures."""


class PublishConflict(PublishError):
    """Terminal: the target already holds different streams for this generation."""


class SimulatedCrash(PublishError):
    """Raised by the fault hook between the streams rows and the timestamp row."""


@dataclass(frozen=True)
class PublishedGeneration:
    time: datetime
    expired: datetime | None


@dataclass
class RewriteReport:
    """What :meth:`CqlDescriptionPublisher.rewrite_v1` did and why it stopped there."""

    status: str
    rewritten: list[datetime] = field(default_factory=list)
    too_old: list[datetime] = field(default_factory=list)
    already_present: list[datetime] = field(default_factory=list)
    missing_description: list[datetime] = field(default_factory=list)
    marker_written: bool = False


def crash_after_streams_from_env(timestamp: datetime) -> None:
    """The default fault hook: crash when ``$CDCGEN_FAULT_PUBLISH`` asks for it."""
    if os.environ.get(FAULT_ENV) == FAULT_CRASH_AFTER_STREAMS:
        raise SimulatedCrash(
            f"{FAULT_ENV}={FAULT_CRASH_AFTER_STREAMS}: stopping after the streams rows of "
            f"{timestamp.isoformat()}, before its timestamp row"
        )


def _utc(value: datetime) -> datetime:
    """The driver returns naive UTC datetimes."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class CqlDescriptionPublisher:
    """:class:`cdcgen.ports.DescriptionPublisher` over cassandra-driver.

    ``keyspace`` (default ``config.target_keyspace``) receives the tables; ``concurrency``
    (default ``config.publish_concurrency``, 20) bounds batches in flight;
    ``source_schema`` names the V1 and ``cdc_local`` tables the rewrite reads;
    ``after_streams`` is the fault hook called between the streams rows and the timestamp
    row (default: crash when ``$CDCGEN_FAULT_PUBLISH=crash-after-streams``; ``None``: off);
    timed-out batches are retried ``retries`` times (idempotent writes).
    """

    def __init__(
        self,
        client: CqlClient,
        config: PipelineConfig | None = None,
        *,
        keyspace: str | None = None,
        concurrency: int | None = None,
        source_schema: SourceSchema | None = None,
        after_streams: Callable[[datetime], None] | None = crash_after_streams_from_env,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
        retries: int = 5,
        retry_backoff: float = 0.5,
    ) -> None:
        chosen = keyspace or (config.target_keyspace if config else SCYLLA_KEYSPACE)
        self.client = client
        self.keyspace = check_identifier(chosen, "target keyspace")
        self.concurrency = concurrency or (config.publish_concurrency if config else 20)
        self.source_schema = source_schema or (config.source_schema if config else SourceSchema())
        self.after_streams = after_streams
        self.batch_bytes = batch_bytes
        self.retries = retries
        self.retry_backoff = retry_backoff
        self._prepared: dict[str, PreparedStatement] = {}
        self._tables_ready = False

    # --- schema -----------------------------------------------------------------------

    @property
    def owns_schema(self) -> bool:
        """Whether we may create tables: never in ScyllaDB's own ``system_distributed``."""
        return self.keyspace != SCYLLA_KEYSPACE

    def ensure_tables(self) -> None:
        """Create the target keyspace and tables (``IF NOT EXISTS``) unless ScyllaDB owns them.

        A new keyspace gets SimpleStrategy with ``RF = min(3, nodes)``; production targets
        are expected to be created by their operators beforehand.
        """
        if self._tables_ready or not self.owns_schema:
            self._tables_ready = True
            return
        factor = max(1, min(3, self.client.node_count))
        self.client.session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {self.keyspace} WITH replication = "
            f"{{'class': 'SimpleStrategy', 'replication_factor': {factor}}}"
        )
        for table in (Table.CDC_STREAMS_DESCRIPTIONS_V2, Table.CDC_GENERATION_TIMESTAMPS):
            self.client.session.execute(
                create_table_cql(table, f"{self.keyspace}.{table.name_only}")
            )
        for name, (columns, options) in TABLET_TABLES.items():
            self.client.session.execute(
                f"CREATE TABLE IF NOT EXISTS {self.keyspace}.{name} ({columns}) WITH {options}"
            )
        self._tables_ready = True

    def _statement(self, cql: str) -> PreparedStatement:
        statement = self._prepared.get(cql)
        if statement is None:
            self.ensure_tables()
            statement = self.client.session.prepare(cql)
            statement.consistency_level = self.client.metadata_consistency
            self._prepared[cql] = statement
        return statement

    def _run(self, cql: str, params: Sequence[Any] = ()) -> Any:
        return self.client.session.execute(self._statement(cql), tuple(params))

    # --- reading ----------------------------------------------------------------------

    def published_generations(self) -> list[PublishedGeneration]:
        """Every row of ``cdc_generation_timestamps``, oldest first."""
        rows = self._run(
            f"SELECT time, expired FROM {self.keyspace}.{TIMESTAMPS} WHERE key = ?",
            (GENERATION_TIMESTAMPS_KEY,),
        )
        found = [
            PublishedGeneration(_utc(r.time), _utc(r.expired) if r.expired else None) for r in rows
        ]
        return sorted(found, key=lambda g: g.time)

    def published_timestamps(self) -> set[datetime]:
        return {g.time for g in self.published_generations()}

    def is_published(self, timestamp: datetime) -> bool:
        rows = self._run(
            f"SELECT time FROM {self.keyspace}.{TIMESTAMPS} WHERE key = ? AND time = ?",
            (GENERATION_TIMESTAMPS_KEY, generation_timestamp(timestamp)),
        )
        return bool(list(rows))

    def read_streams(self, timestamp: datetime) -> dict[int, frozenset[bytes]]:
        """The published (possibly partial) streams of a generation, by range end."""
        rows = self._run(
            f"SELECT range_end, streams FROM {self.keyspace}.{STREAMS_V2} WHERE time = ?",
            (generation_timestamp(timestamp),),
        )
        return {r.range_end: frozenset(r.streams or ()) for r in rows}

    # --- vnode generations ------------------------------------------------------------

    def publish(self, timestamp: datetime, description: TopologyDescription) -> int:
        """Publish one generation; returns the number of ``cdc_streams_descriptions_v2`` rows."""
        return self.publish_rows(timestamp, rows_of(description))

    def publish_rows(self, timestamp: datetime, rows: StreamRows) -> int:
        """Publish ``(range_end, [stream blob, ...])`` rows, then the timestamp row.

        Existing rows are compared first: equal ones are not written again (a re-run after
        a crash writes only what is missing), a different one is a :class:`PublishConflict`.
        """
        when = generation_timestamp(timestamp)
        wanted = {end: frozenset(streams) for end, streams in rows}
        if len(wanted) != len(rows):
            raise PublishError(f"generation {when.isoformat()} lists a range end twice")
        existing = self.read_streams(when)
        _check_conflict(when, wanted, existing)
        missing = [(end, list(streams)) for end, streams in rows if end not in existing]
        self._write_stream_batches(when, missing)
        if self.after_streams is not None:
            self.after_streams(when)
        self._run(
            f"INSERT INTO {self.keyspace}.{TIMESTAMPS} (key, time) VALUES (?, ?)",
            (GENERATION_TIMESTAMPS_KEY, when),
        )
        log.info(
            "published generation %s to %s: %d rows (%d written now)",
            when.isoformat(),
            self.keyspace,
            len(rows),
            len(missing),
        )
        return len(rows)

    def _write_stream_batches(self, when: datetime, rows: StreamRows) -> None:
        from cassandra.query import BatchStatement, BatchType

        if not rows:
            return
        insert = self._statement(
            f"INSERT INTO {self.keyspace}.{STREAMS_V2} (time, range_end, streams) VALUES (?, ?, ?)"
        )
        statements = []
        for group in batches_by_size(rows, self.batch_bytes):
            batch = BatchStatement(
                batch_type=BatchType.UNLOGGED, consistency_level=self.client.metadata_consistency
            )
            for end, streams in group:
                batch.add(insert, (when, end, set(streams)))
            statements.append(batch)
        self._execute_logging_progress(statements, "ranges", f"publish {when.isoformat()}")

    def _execute_logging_progress(self, statements: Sequence[Any], unit: str, label: str) -> None:
        """:meth:`_execute_all` in slices, so the log says how far a large write has got."""
        sizes = [len(batch) for batch in statements]
        progress = Progress(total=sum(sizes), unit=unit, log=log.info, label=label)
        for start in range(0, len(statements), PROGRESS_SLICE):
            self._execute_all(statements[start : start + PROGRESS_SLICE])
            progress.advance(sum(sizes[start : start + PROGRESS_SLICE]))
        if len(statements) > PROGRESS_SLICE:
            progress.finish()

    def _execute_all(self, statements: Sequence[Any]) -> None:
        """Run statements ``concurrency`` at a time, retrying the ones that timed out.

        Every statement writes the same rows on every attempt, so a retry is safe. A busy
        node times out under 20 concurrent megabyte batches; each retry round halves the
        concurrency and backs off. Anything but a timeout/unavailability fails at once.
        """
        from cassandra import OperationTimedOut, Unavailable, WriteTimeout
        from cassandra.cluster import NoHostAvailable
        from cassandra.concurrent import execute_concurrent

        transient = (WriteTimeout, OperationTimedOut, Unavailable, NoHostAvailable)
        pending = list(statements)
        concurrency = self.concurrency
        for attempt in range(self.retries + 1):
            results = execute_concurrent(
                self.client.session,
                [(statement, ()) for statement in pending],
                concurrency=concurrency,
                raise_on_first_error=False,
                results_generator=False,
            )
            failed = [
                (statement, outcome)
                for statement, (ok, outcome) in zip(pending, results, strict=True)
                if not ok
            ]
            if not failed:
                return
            for _, error in failed:
                if not isinstance(error, transient):
                    raise error
            if attempt == self.retries:
                raise failed[0][1]
            concurrency = max(1, concurrency // 2)
            log.warning(
                "%d of %d writes timed out (%s); retrying with %d in flight",
                len(failed),
                len(pending),
                failed[0][1],
                concurrency,
            )
            time.sleep(self.retry_backoff * 2**attempt)
            pending = [statement for statement, _ in failed]

    # --- expiry -----------------------------------------------------------------------

    def expire_superseded(
        self, cdc_tables: Sequence[CdcTable], *, now: datetime | None = None
    ) -> list[Expiry]:
        """Set ``expired`` on superseded generations no CDC table can hold data of.

        The seed's TODO. ``expired`` is the instant from which the generation is empty in
        every CDC table (superseding timestamp + the longest TTL + 10 s drift, see
        :mod:`.publication_rules`); the newest generation is never expired; a value
        already set is left alone. Returns the generations marked now.
        """
        clock = generation_timestamp((now or datetime.now(UTC)).replace(microsecond=0))
        published = self.published_generations()
        pending = {g.time for g in published if g.expired is None}
        marked = [
            e
            for e in expirations([g.time for g in published], cdc_tables, clock)
            if e.timestamp in pending
        ]
        for expiry in marked:
            self._run(
                f"UPDATE {self.keyspace}.{TIMESTAMPS} SET expired = ? WHERE key = ? AND time = ?",
                (_to_millis(expiry.expired), GENERATION_TIMESTAMPS_KEY, expiry.timestamp),
            )
        return marked

    # --- tablets ----------------------------------------------------------------------

    def publish_tablet_streams(
        self, keyspace_name: str, table_name: str, views: Sequence[StreamSetView]
    ) -> int:
        """Publish a tablets table's stream sets as ``cdc_streams`` + ``cdc_timestamps``.

        Per timestamp (oldest first): its current/closed/opened rows, then its timestamp
        row, so a reader that sees a timestamp sees its whole set. Re-publishing is
        idempotent; different streams at a published timestamp are a conflict.
        """
        if not self.owns_schema:
            raise PublishError(
                "system.cdc_timestamps/cdc_streams are ScyllaDB virtual tables: publish tablets "
                "views to a target keyspace other than system_distributed"
            )
        written = 0
        for view in sorted(views, key=lambda v: v.timestamp):
            when = generation_timestamp(view.timestamp)
            wanted = {(int(state), stream.raw) for _, state, stream in view.rows()}
            existing = {
                (r.stream_state, bytes(r.stream_id))
                for r in self._run(
                    f"SELECT stream_state, stream_id FROM {self.keyspace}.{TABLET_STREAMS} "
                    "WHERE keyspace_name = ? AND table_name = ? AND timestamp = ?",
                    (keyspace_name, table_name, when),
                )
            }
            if not existing <= wanted:
                extra = sorted(existing - wanted)[:3]
                raise PublishConflict(
                    f"{keyspace_name}.{table_name} at {when.isoformat()} already has other "
                    f"streams in {self.keyspace}.{TABLET_STREAMS}, e.g. "
                    + ", ".join(f"state {s} {b.hex()}" for s, b in extra)
                )
            self._write_tablet_rows(keyspace_name, table_name, when, sorted(wanted - existing))
            if self.after_streams is not None:
                self.after_streams(when)
            self._run(
                f"INSERT INTO {self.keyspace}.{TABLET_TIMESTAMPS} "
                "(keyspace_name, table_name, timestamp) VALUES (?, ?, ?)",
                (keyspace_name, table_name, when),
            )
            written += len(wanted)
        return written

    def _write_tablet_rows(
        self, keyspace_name: str, table_name: str, when: datetime, rows: Sequence[tuple[int, bytes]]
    ) -> None:
        from cassandra.query import BatchStatement, BatchType

        insert = self._statement(
            f"INSERT INTO {self.keyspace}.{TABLET_STREAMS} "
            "(keyspace_name, table_name, timestamp, stream_state, stream_id) VALUES (?, ?, ?, ?, ?)"
        )
        per_batch = max(1, self.batch_bytes // 96)
        statements = []
        for start in range(0, len(rows), per_batch):
            batch = BatchStatement(
                batch_type=BatchType.UNLOGGED, consistency_level=self.client.metadata_consistency
            )
            for state, blob in rows[start : start + per_batch]:
                batch.add(insert, (keyspace_name, table_name, when, state, blob))
            statements.append(batch)
        self._execute_logging_progress(statements, "rows", f"publish {keyspace_name}.{table_name}")

    def published_tablet_timestamps(self, keyspace_name: str, table_name: str) -> list[datetime]:
        rows = self._run(
            f"SELECT timestamp FROM {self.keyspace}.{TABLET_TIMESTAMPS} "
            "WHERE keyspace_name = ? AND table_name = ?",
            (keyspace_name, table_name),
        )
        return sorted(_utc(r.timestamp) for r in rows)

    # --- V1 -> V2 rewrite -------------------------------------------------------------

    def rewrite_v1(
        self, cdc_tables: Sequence[CdcTable], *, now: datetime | None = None
    ) -> RewriteReport:
        """Copy the V1 (ScyllaDB 4.3) generations that may still hold data to the V2 tables.

        The procedure of the seed document, with ScyllaDB's exact "too old" rule:

        1. no V1 streams table in the source: nothing to do;
        2. the source's ``cdc_local`` has ``key = 'rewritten'``: already done;
        3. no CDC table: write the marker and stop;
        4. read every V1 generation timestamp;
        5. skip those too old for every CDC table's TTL;
        6. for each remaining one not yet in the target's timestamps table: read its
           description from ``cdc_generation_descriptions`` and publish it (streams, then
           timestamp);
        7. write ``key = 'rewritten'`` (with the last rewritten timestamp, as ScyllaDB does).
        """
        schema = self.source_schema
        streams_v1 = schema.name(Table.CDC_STREAMS_DESCRIPTIONS_V1)
        keyspace, table = streams_v1.split(".", 1)
        if not self._table_exists(keyspace, table):
            return RewriteReport("no V1 streams table: nothing to rewrite")
        cdc_local = schema.name(Table.CDC_LOCAL)
        marker = self.client.execute(
            f"SELECT key FROM {cdc_local} WHERE key = %s", (CDC_LOCAL_REWRITTEN_KEY,)
        )
        if list(marker):
            return RewriteReport("already rewritten")
        if not cdc_tables:
            self._write_marker(cdc_local, None)
            return RewriteReport("no CDC table: marker only", marker_written=True)
        stamps = sorted(_utc(r.time) for r in self.client.execute(f"SELECT time FROM {streams_v1}"))
        keep = generations_to_rewrite(stamps, cdc_tables, now or datetime.now(UTC))
        report = RewriteReport("rewritten", too_old=[s for s in stamps if s not in set(keep)])
        published = self.published_timestamps()
        descriptions = schema.name(Table.CDC_GENERATION_DESCRIPTIONS_V1)
        for stamp in keep:
            if stamp in published:
                report.already_present.append(stamp)
                continue
            rows = list(
                self.client.execute(
                    f"SELECT description FROM {descriptions} WHERE time = %s", (stamp,)
                )
            )
            if not rows or rows[0].description is None:
                # ScyllaDB gives up on such a generation and goes on with the others.
                log.error("V1 generation %s has no description: not rewritten", stamp.isoformat())
                report.missing_description.append(stamp)
                continue
            self.publish_rows(
                stamp, [(end, list(streams)) for end, streams, _ in rows[0].description]
            )
            report.rewritten.append(stamp)
        self._write_marker(cdc_local, keep[-1] if keep else None)
        report.marker_written = True
        return report

    def _write_marker(self, cdc_local: str, last: datetime | None) -> None:
        if last is None:
            self.client.execute(
                f"INSERT INTO {cdc_local} (key) VALUES (%s)", (CDC_LOCAL_REWRITTEN_KEY,)
            )
        else:
            self.client.execute(
                f"INSERT INTO {cdc_local} (key, streams_timestamp) VALUES (%s, %s)",
                (CDC_LOCAL_REWRITTEN_KEY, last),
            )

    def _table_exists(self, keyspace: str, table: str) -> bool:
        rows = self.client.execute(
            "SELECT table_name FROM system_schema.tables "
            "WHERE keyspace_name = %s AND table_name = %s",
            (keyspace, table),
        )
        return bool(list(rows))


def _check_conflict(
    when: datetime, wanted: Mapping[int, frozenset[bytes]], existing: Mapping[int, frozenset[bytes]]
) -> None:
    """Refuse to overwrite: every existing row must be one of the wanted rows, unchanged."""
    problems = []
    for end, streams in existing.items():
        if end not in wanted:
            problems.append(f"range_end {end} is published but not in this description")
        elif streams != wanted[end]:
            problems.append(f"range_end {end} is published with different streams")
        if len(problems) >= 3:
            break
    if problems:
        raise PublishConflict(
            f"generation {when.isoformat()} is already published with different streams "
            f"({'; '.join(problems)}); refusing to overwrite it"
        )


def _to_millis(value: datetime) -> datetime:
    """CQL timestamps hold milliseconds: drop anything finer."""
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def rows_of(description: TopologyDescription) -> list[tuple[int, list[bytes]]]:
    """``(range_end, [stream blobs])`` of every entry: the rows this module publishes."""
    return [(e.range_end, [s.raw for s in e.streams]) for e in description.entries]
