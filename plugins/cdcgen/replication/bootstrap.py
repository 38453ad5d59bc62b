"""Bootstrapping a sink from a snapshot of the source table, then applying from its time.

The xCluster design's first branch: a sink over a source that already holds data
starts from a copy taken at a recorded time ``S``, and the changes apply from ``S`` on.

* ``S`` is fixed before the copy reads anything, one confidence window plus the
  generation leeway before now: every write stamped before ``S`` has then reached the
  source (the changes pipeline's own rule for a closed window), so the copy holds it.
  Writes stamped after ``S`` may or may not be in the copy; the changes from ``S`` on
  are applied after it anyway, and replaying them is harmless.
* Each copied cell keeps its write time and remaining TTL (``WRITETIME``/``TTL``), so
  the sink resolves later changes, replayed at their own times, as the source did.
  Non-frozen collections and the row marker, whose times CQL cannot read, are written
  at ``S - 1 µs``: older than every change the apply brings, younger than nothing the
  copy must keep. (A row created by ``UPDATE`` has no marker on the source but gets one
  on the sink; it differs only once every cell of that row is deleted.)
* The copy scans the token ring range by range at the metadata consistency level, and
  writes each row as one single-partition batch, many at a time.
* The consistency point ``S`` is written on the sink only after every row is
  acknowledged; a bootstrap killed half-way left no state and simply runs again.
* A sink table that already holds rows is replaced only when asked (``replace``): it is
  truncated first, since rows the source deleted meanwhile would otherwise stay.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.replication import ColumnKind, quote
from cdcgen.core.replication_plan import ReplicationError, bootstrap_command
from cdcgen.core.time import iso_millis, to_micros
from cdcgen.core.token_ranges import TokenRange, ring_ranges
from cdcgen.progress import Progress
from cdcgen.replication.apply import CONCURRENCY, execute_all
from cdcgen.replication.sink_schema import SinkShape
from cdcgen.replication.sink_state import CqlSinkState

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient

log = logging.getLogger(__name__)

SCAN_RANGES = 64
PAGE_ROWS = 2_000


@dataclass(frozen=True)
class BootstrapOutcome:
    snapshot_at: datetime
    rows: int
    truncated: bool


def snapshot_time(now: datetime, confidence: timedelta, leeway: timedelta) -> datetime:
    """The copy's time ``S``: no write stamped before it can still be on its way."""
    return now - confidence - leeway


def check_lake_covers(
    source: TableRef, sink: TableRef, since: datetime | None, at: datetime
) -> None:
    """The lake must hold the source's changes from ``at`` on, or the apply after the
    copy could not start."""
    if since is None or since > at:
        held = "none yet" if since is None else f"only from {iso_millis(since)}"
        raise ReplicationError(
            f"{source}: the lake holds its changes {held}, so changes after a snapshot at "
            f"{iso_millis(at)} could not be applied to {sink}; run the cdc_changes DAG for "
            f"{source} first, then `{bootstrap_command(source, sink)}`"
        )


class SnapshotCopy:
    """Copies the source table's rows into the sink table, write times kept."""

    def __init__(
        self,
        source_client: CqlClient,
        sink_client: CqlClient,
        source: TableRef,
        shape: SinkShape,
        concurrency: int = CONCURRENCY,
    ) -> None:
        self.source_client = source_client
        self.sink_client = sink_client
        self.source = source
        self.shape = shape
        self.concurrency = concurrency
        table = shape.table
        self.keys = (*table.partition_key, *table.clustering_key)
        self.atomic = [c for c, k in table.columns.items() if k is ColumnKind.ATOMIC]
        self.collections = [c for c, k in table.columns.items() if k is not ColumnKind.ATOMIC]

    def select_cql(self) -> str:
        parts = [quote(k) for k in self.keys]
        for column in self.atomic:
            name = quote(column)
            parts += [name, f"WRITETIME({name})", f"TTL({name})"]
        parts += [quote(c) for c in self.collections]
        token = ", ".join(quote(k) for k in self.shape.table.partition_key)
        return (
            f"SELECT {', '.join(parts)} FROM {quote(self.source.keyspace)}."
            f"{quote(self.source.table)} WHERE token({token}) > ? AND token({token}) <= ?"
        )

    def sink_is_empty(self) -> bool:
        rows = self.sink_client.execute(
            f"SELECT {quote(self.keys[0])} FROM {self.shape.table.qualified} LIMIT 1"
        )
        return rows.one() is None

    def truncate_sink(self) -> None:
        self.sink_client.session.execute(f"TRUNCATE {self.shape.table.qualified}", timeout=120)

    def copy(self, snapshot_at: datetime) -> int:
        """Every row of the source into the sink; how many."""
        select = self.source_client.prepared(self.select_cql())
        select.fetch_size = PAGE_ROWS
        ring = [int(t.value) for t in self.source_client.cluster.metadata.token_map.ring]
        ranges = ring_ranges(ring, at_least=SCAN_RANGES)
        progress = Progress(len(ranges), "token ranges", log.info, label=f"copy {self.source}")
        copied = 0
        for token_range in ranges:
            for page in self._pages(select, token_range):
                work = [(self._row_batch(row, snapshot_at), row) for row in page]
                execute_all(self.sink_client, work, self.concurrency, self._refused)
                copied += len(work)
            progress.advance(rows=0)
        progress.finish()
        return copied

    def _pages(self, select: Any, token_range: TokenRange) -> Iterator[Sequence[Any]]:
        result = self.source_client.execute_retried(select, (token_range.low, token_range.high))
        page: list[Any] = []
        for row in result:
            page.append(row)
            if len(page) >= PAGE_ROWS:
                yield page
                page = []
        if page:
            yield page

    def _row_batch(self, row: Any, snapshot_at: datetime) -> Any:
        from cassandra.query import BatchStatement, BatchType

        table = self.shape.table
        width = len(self.keys)
        keys = list(row[:width])
        where = " AND ".join(f"{quote(k)} = ?" for k in self.keys)
        marker_ts = to_micros(snapshot_at) - 1
        batch = BatchStatement(batch_type=BatchType.UNLOGGED)
        batch.is_idempotent = True
        columns = ", ".join(quote(k) for k in self.keys)
        marks = ", ".join("?" for _ in self.keys)
        batch.add(
            self.sink_client.prepared(
                f"INSERT INTO {table.qualified} ({columns}) VALUES ({marks}) USING TIMESTAMP ?"
            ),
            (*keys, marker_ts),
        )
        for i, column in enumerate(self.atomic):
            value, written, ttl = row[width + 3 * i : width + 3 * i + 3]
            if value is None:
                continue
            using = "USING TIMESTAMP ?" + (" AND TTL ?" if ttl else "")
            cql = f"UPDATE {table.qualified} {using} SET {quote(column)} = ? WHERE {where}"
            batch.add(
                self.sink_client.prepared(cql), (written, *([ttl] if ttl else []), value, *keys)
            )
        collections = row[width + 3 * len(self.atomic) :]
        for column, value in zip(self.collections, collections, strict=True):
            if value:
                name = quote(column)
                sets = f"{name} = {name} + ?"
                cql = f"UPDATE {table.qualified} USING TIMESTAMP ? SET {sets} WHERE {where}"
                batch.add(self.sink_client.prepared(cql), (marker_ts, value, *keys))
        return batch

    def _refused(self, row: Any, reason: str) -> None:
        raise ReplicationError(f"{self.shape.table.qualified}: a copied row was refused: {reason}")


def bootstrap(
    copy: SnapshotCopy,
    state: CqlSinkState,
    snapshot_at: datetime,
    lake_since: datetime | None,
    current: datetime | None,
    run_id: str,
    replace: bool = False,
) -> BootstrapOutcome:
    """Copy at ``snapshot_at``, then record it as the sink's consistency point
    (``current``: the sink's consistency point now, None for a new sink)."""
    check_lake_covers(state.source, state.sink, lake_since, snapshot_at)
    if current is not None and current > snapshot_at:
        raise ReplicationError(
            f"{state.sink} is consistent with {state.source} until {iso_millis(current)}, "
            f"later than a snapshot now ({iso_millis(snapshot_at)}): nothing to re-bootstrap"
        )
    truncated = False
    if not copy.sink_is_empty():
        if not replace:
            raise ReplicationError(
                f"{state.sink} already holds rows; a bootstrap replaces them only when asked "
                "(--replace): rows deleted on the source would otherwise stay"
            )
        copy.truncate_sink()
        truncated = True
    rows = copy.copy(snapshot_at)
    state.save_progress(snapshot_at, run_id, bootstrapped_at=snapshot_at)
    log.info("%s: bootstrapped from %s at %s, %d rows", state.sink, state.source, snapshot_at, rows)
    return BootstrapOutcome(snapshot_at, rows, truncated)
