"""Bootstrapping a sink from a snapshot of the source table, then applying from its time.

The xCluster design's first branch: a sink over a source that already holds data
starts from a copy taken at a recorded time ``S``, and the changes apply from ``S`` on.

* ``S`` is fixed before the copy reads anything, from the source nodes' clocks
  (:func:`cdcgen.core.replication_plan.snapshot_time`): every write stamped before
  ``S`` has then reached the source, so the copy holds it. Writes stamped after ``S``
  may or may not be in the copy; the changes from ``S`` on are applied after it anyway,
  and replaying them is harmless.
* Each copied cell keeps its write time and remaining TTL
  (:mod:`cdcgen.core.snapshot_copy`), so the sink resolves later changes, replayed at
  their own times, as the source did.
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
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.replication_plan import ReplicationError, bootstrap_command
from cdcgen.core.snapshot_copy import CopyLayout
from cdcgen.core.time import iso_millis, to_micros
from cdcgen.core.token_ranges import TokenRange, ring_ranges
from cdcgen.progress import Progress
from cdcgen.replication.apply import execute_all
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
        concurrency: int = 64,
    ) -> None:
        self.source_client = source_client
        self.sink_client = sink_client
        self.source = source
        self.shape = shape
        self.concurrency = concurrency
        self.layout = CopyLayout(shape.table)

    def select_cql(self) -> str:
        return self.layout.select_cql(self.source)

    def sink_is_empty(self) -> bool:
        return sink_is_empty(self.sink_client, self.shape)

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

        batch = BatchStatement(batch_type=BatchType.UNLOGGED)
        batch.is_idempotent = True
        for statement in self.layout.statements(row, to_micros(snapshot_at)):
            batch.add(self.sink_client.prepared(statement.cql), statement.values)
        return batch

    def _refused(self, row: Any, reason: str) -> None:
        raise ReplicationError(f"{self.shape.table.qualified}: a copied row was refused: {reason}")


def sink_is_empty(client: CqlClient, shape: SinkShape) -> bool:
    """Whether the sink table holds no row (a bootstrap then has nothing to replace)."""
    from cdcgen.core.replication import quote

    key = quote(shape.table.partition_key[0])
    return client.execute(f"SELECT {key} FROM {shape.table.qualified} LIMIT 1").one() is None


@dataclass(frozen=True)
class BootstrapPlan:
    """What a bootstrap will do: copy at ``snapshot_at``, truncating the sink table
    first when it holds rows (only when asked)."""

    source: TableRef
    sink: TableRef
    snapshot_at: datetime
    truncate: bool


def plan_bootstrap(
    source: TableRef,
    sink: TableRef,
    snapshot_at: datetime,
    *,
    lake_since: datetime | None,
    current: datetime | None,
    sink_empty: bool,
    replace: bool,
) -> BootstrapPlan:
    """Every check a bootstrap makes before it writes anything (a dry run stops here):
    the lake covers the changes after the snapshot, the sink is not already consistent
    past it (``current``: its consistency point, None for a new sink), and a sink table
    holding rows is replaced only when asked."""
    check_lake_covers(source, sink, lake_since, snapshot_at)
    if current is not None and current > snapshot_at:
        raise ReplicationError(
            f"{sink} is consistent with {source} until {iso_millis(current)}, "
            f"later than a snapshot now ({iso_millis(snapshot_at)}): nothing to re-bootstrap"
        )
    if not sink_empty and not replace:
        raise ReplicationError(
            f"{sink} already holds rows; a bootstrap replaces them only when asked "
            "(--replace): rows deleted on the source would otherwise stay"
        )
    return BootstrapPlan(source, sink, snapshot_at, truncate=not sink_empty)


def bootstrap(copy: SnapshotCopy, state: CqlSinkState, plan: BootstrapPlan, run_id: str
              ) -> BootstrapOutcome:  # fmt: skip
    """Truncate if planned, copy at the plan's snapshot time, then record it as the
    sink's consistency point."""
    if plan.truncate:
        copy.truncate_sink()
    rows = copy.copy(plan.snapshot_at)
    state.save_progress(plan.snapshot_at, run_id, bootstrapped_at=plan.snapshot_at)
    log.info(
        "%s: bootstrapped from %s at %s, %d rows", plan.sink, plan.source, plan.snapshot_at, rows
    )
    return BootstrapOutcome(plan.snapshot_at, rows, plan.truncate)
