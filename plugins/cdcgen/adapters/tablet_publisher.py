"""Publish a tablets table's stream sets the way ScyllaDB shows them to consumers.

ScyllaDB describes a tablets table's streams in the virtual tables ``system.cdc_streams``
(per timestamp: the current streams, and which closed and opened against the previous
set) and ``system.cdc_timestamps``; this publisher writes the same shape into real
tables of the target keyspace (:data:`cdcgen.schema.TABLET_VIEWS`). Per timestamp, oldest
first: its rows, then its timestamp row, so a reader that sees a timestamp sees its whole
set. Re-publishing is idempotent; different streams at a published timestamp are a
conflict.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from cdcgen.adapters.errors import PublishConflict, PublishError
from cdcgen.adapters.publisher import CqlDescriptionPublisher
from cdcgen.core.tablets import StreamState
from cdcgen.core.time import generation_timestamp, naive_as_utc
from cdcgen.schema import TABLET_STREAMS, TABLET_TIMESTAMPS

if TYPE_CHECKING:
    from cdcgen.core.tablets import StreamSetView


class TabletsPublisher(CqlDescriptionPublisher):
    """:class:`CqlDescriptionPublisher` plus the tablets views."""

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
                for r in self.run(
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
            self.run(
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
        self.writer.execute(statements, "rows", f"publish {keyspace_name}.{table_name}")

    def published_tablet_timestamps(self, keyspace_name: str, table_name: str) -> list[datetime]:
        rows = self.run(
            f"SELECT timestamp FROM {self.keyspace}.{TABLET_TIMESTAMPS} "
            "WHERE keyspace_name = ? AND table_name = ?",
            (keyspace_name, table_name),
        )
        return sorted(naive_as_utc(r.timestamp) for r in rows)

    def read_tablet_streams(
        self, keyspace_name: str, table_name: str, timestamp: datetime
    ) -> frozenset[bytes]:
        """The current streams published for one stream set."""
        rows = self.run(
            f"SELECT stream_state, stream_id FROM {self.keyspace}.{TABLET_STREAMS} "
            "WHERE keyspace_name = ? AND table_name = ? AND timestamp = ?",
            (keyspace_name, table_name, generation_timestamp(timestamp)),
        )
        return frozenset(bytes(r.stream_id) for r in rows if r.stream_state == StreamState.CURRENT)
