"""Publish generations to the user-facing description tables, the way ScyllaDB does.

Contract (design doc section 5): every row of ``cdc_streams_descriptions_v2`` first
(:meth:`CqlDescriptionPublisher.write_streams`), then, only after all of them succeeded,
the ``cdc_generation_timestamps`` row (:meth:`~CqlDescriptionPublisher.write_timestamp`).
A client reads a generation's streams only after it sees the timestamp, so a crash in
between leaves nothing visible, and a re-run completes the same rows (idempotent). Rows
go in unlogged single-partition batches of about 1 MB (all rows of a generation share the
partition key ``time``, so a batch is one atomic mutation), at most
``publish_concurrency`` (20) in flight, at the client's metadata consistency (QUORUM on a
multi-node cluster).

A generation already (even partly) published with *different* streams is refused with
:class:`PublishConflict`: a description is never silently overwritten.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.errors import PublishConflict, PublishError
from cdcgen.adapters.writes import DEFAULT_BATCH_BYTES, IdempotentWriter, batches_by_size
from cdcgen.core.identifiers import SCYLLA_DISTRIBUTED, check_writable_keyspace
from cdcgen.core.time import generation_timestamp, naive_as_utc
from cdcgen.core.topology import TopologyDescription
from cdcgen.schema import (
    GENERATION_TIMESTAMPS_KEY,
    TABLET_VIEWS,
    Table,
    create_keyspace_cql,
    create_table_cql,
)

if TYPE_CHECKING:
    from cassandra.query import PreparedStatement

    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig

log = logging.getLogger(__name__)

SCYLLA_KEYSPACE = SCYLLA_DISTRIBUTED
"""ScyllaDB's own keyspace: its tables exist already and must never be created by us."""


STREAMS_V2 = Table.CDC_STREAMS_DESCRIPTIONS_V2.name_only
TIMESTAMPS = Table.CDC_GENERATION_TIMESTAMPS.name_only

StreamRows = Sequence[tuple[int, Sequence[bytes]]]


@dataclass(frozen=True)
class PublishedGeneration:
    time: datetime
    expired: datetime | None


class CqlDescriptionPublisher:
    """:class:`cdcgen.ports.DescriptionPublisher` over cassandra-driver.

    ``keyspace`` (default ``config.target_keyspace``) receives the tables; ``concurrency``
    (default ``config.publish_concurrency``, 8) bounds batches in flight; timed-out
    batches are retried ``retries`` times (idempotent writes).
    """

    def __init__(
        self,
        client: CqlClient,
        config: PipelineConfig | None = None,
        *,
        keyspace: str | None = None,
        concurrency: int | None = None,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
        retries: int = 5,
        retry_backoff: float = 0.5,
    ) -> None:
        chosen = keyspace or (config.target_keyspace if config else SCYLLA_KEYSPACE)
        self.client = client
        self.keyspace = check_writable_keyspace(
            chosen, "target keyspace", allowed=frozenset({SCYLLA_KEYSPACE}),
            setting="CDCGEN_TARGET_KEYSPACE",
        )  # fmt: skip
        self.concurrency = concurrency or (config.publish_concurrency if config else 8)
        self.batch_bytes = batch_bytes
        self.writer = IdempotentWriter(client, self.concurrency, retries, retry_backoff)
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
        replication = {"class": "SimpleStrategy", "replication_factor": factor}
        self.client.session.execute(create_keyspace_cql(self.keyspace, replication))
        for table in (Table.CDC_STREAMS_DESCRIPTIONS_V2, Table.CDC_GENERATION_TIMESTAMPS):
            self.client.session.execute(
                create_table_cql(table, f"{self.keyspace}.{table.name_only}")
            )
        for name, (columns, options) in TABLET_VIEWS.items():
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

    def run(self, cql: str, params: Sequence[Any] = ()) -> Any:
        """One statement on the target, prepared once, at the metadata consistency, retried."""
        return self.writer.execute_one(self._statement(cql), params)

    # --- reading ----------------------------------------------------------------------

    def published_generations(self) -> list[PublishedGeneration]:
        """Every row of ``cdc_generation_timestamps``, oldest first."""
        rows = self.run(
            f"SELECT time, expired FROM {self.keyspace}.{TIMESTAMPS} WHERE key = ?",
            (GENERATION_TIMESTAMPS_KEY,),
        )
        found = [
            PublishedGeneration(
                naive_as_utc(r.time), naive_as_utc(r.expired) if r.expired else None
            )
            for r in rows
        ]
        return sorted(found, key=lambda g: g.time)

    def published_timestamps(self) -> set[datetime]:
        return {g.time for g in self.published_generations()}

    def is_published(self, timestamp: datetime) -> bool:
        rows = self.run(
            f"SELECT time FROM {self.keyspace}.{TIMESTAMPS} WHERE key = ? AND time = ?",
            (GENERATION_TIMESTAMPS_KEY, generation_timestamp(timestamp)),
        )
        return bool(list(rows))

    def mark_expired(self, timestamp: datetime, expired: datetime) -> None:
        """Set a published generation's ``expired`` column."""
        self.run(
            f"UPDATE {self.keyspace}.{TIMESTAMPS} SET expired = ? WHERE key = ? AND time = ?",
            (expired, GENERATION_TIMESTAMPS_KEY, generation_timestamp(timestamp)),
        )

    def read_streams(self, timestamp: datetime) -> dict[int, frozenset[bytes]]:
        """The published (possibly partial) streams of a generation, by range end."""
        rows = self.run(
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

        A generation without rows is refused before anything is written: its timestamp
        alone would send consumers to a generation with no streams (ScyllaDB's consumer
        libraries fail on one), and every newer generation would wait behind it."""
        if not rows or not any(streams for _, streams in rows):
            when = generation_timestamp(timestamp).isoformat()
            raise PublishError(f"generation {when} has no stream description rows: not published")
        written = self.write_streams(timestamp, rows)
        self.write_timestamp(timestamp)
        log.info(
            "published generation %s to %s: %d rows (%d written now)",
            generation_timestamp(timestamp).isoformat(),
            self.keyspace,
            len(rows),
            written,
        )
        return len(rows)

    def write_streams(self, timestamp: datetime, rows: StreamRows) -> int:
        """Step 1: every ``cdc_streams_descriptions_v2`` row; returns how many were missing.

        Existing rows are compared first: equal ones are not written again (a re-run after
        a crash writes only what is missing), a different one is a :class:`PublishConflict`.
        """
        when = generation_timestamp(timestamp)
        wanted = dict(rows)
        if len(wanted) != len(rows):
            raise PublishError(f"generation {when.isoformat()} lists a range end twice")
        existing = self.read_streams(when)
        _check_conflict(when, wanted, existing)
        missing = [row for row in rows if row[0] not in existing] if existing else list(rows)
        self._write_stream_batches(when, missing)
        return len(missing)

    def write_timestamp(self, timestamp: datetime) -> None:
        """Step 2, only once step 1 succeeded: the row that makes the generation visible."""
        self.run(
            f"INSERT INTO {self.keyspace}.{TIMESTAMPS} (key, time) VALUES (?, ?)",
            (GENERATION_TIMESTAMPS_KEY, generation_timestamp(timestamp)),
        )

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
        self.writer.execute(statements, "ranges", f"publish {when.isoformat()}")


def _check_conflict(
    when: datetime, wanted: Mapping[int, Sequence[bytes]], existing: Mapping[int, frozenset[bytes]]
) -> None:
    """Refuse to overwrite: every existing row must be one of the wanted rows, unchanged.

    Only the existing rows' streams are hashed: a first publication has none, and
    hashing 1.6M streams for nothing is a cost worth skipping."""
    problems = []
    for end, streams in existing.items():
        if end not in wanted:
            problems.append(f"range_end {end} is published but not in this description")
        elif streams != frozenset(wanted[end]):
            problems.append(f"range_end {end} is published with different streams")
        if len(problems) >= 3:
            break
    if problems:
        raise PublishConflict(
            f"generation {when.isoformat()} is already published with different streams "
            f"({'; '.join(problems)}); refusing to overwrite it"
        )


def rows_of(description: TopologyDescription) -> list[tuple[int, list[bytes]]]:
    """``(range_end, [stream blobs])`` of every entry: the rows this module publishes."""
    return [(e.range_end, [s.raw for s in e.streams]) for e in description.entries]
