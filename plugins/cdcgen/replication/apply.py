"""Applying a table's changes from the lake to a sink, stream by stream, checkpointed.

A run reads the lake version that holds everything up to the watermark, keeps the
changes of the plan's range (:mod:`cdcgen.core.replication_plan`), and replays them in
each stream's order, one CDC batch per single-partition batch
(:func:`cdcgen.core.replication.batch_statements`), many at a time. Streams go in
chunks: once every batch of a chunk is acknowledged, its streams' checkpoints are
written; a run killed before that re-applies the chunk, which changes nothing, since
every write carries its original timestamp. Transient write failures (a node down, a
timeout) are retried with backoff; a change the sink refuses, or the model cannot
express, is recorded on the sink (``cdc_replication_rejects``) before its stream's
checkpoint moves past it, and named in the run's result: never dropped in silence.

With a ``peer`` (active-active), batches the sink's own log already holds are skipped
(:mod:`cdcgen.replication.peers`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.errors import is_transient
from cdcgen.core.cdc_log import BATCH_SEQ_NO, STREAM_ID, TIME
from cdcgen.core.replication import ReplayError, Statement, batch_statements
from cdcgen.core.replication_plan import ApplyPlan
from cdcgen.core.time import to_micros
from cdcgen.progress import Progress
from cdcgen.replication.lake_changes import CHUNK_ROWS, changes_in_range, stream_chunks
from cdcgen.replication.peers import fingerprint, peer_changes
from cdcgen.replication.sink_schema import SinkShape
from cdcgen.replication.sink_state import CqlSinkState

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.adapters.lake_store import LakeRoot

log = logging.getLogger(__name__)

CONCURRENCY = 64
RETRIES = 5
BACKOFF_SECONDS = 0.5


@dataclass
class ApplyOutcome:
    """What one run applied."""

    log_rows: int = 0
    #: Log rows skipped because the sink's own log already holds them (active-active).
    peer_rows: int = 0
    batches: int = 0
    statements: int = 0
    streams: int = 0
    rejected: list[dict[str, Any]] = field(default_factory=list)


class SinkApplier:
    """Applies chunks of changes to one sink table and checkpoints their streams."""

    def __init__(
        self,
        client: CqlClient,
        shape: SinkShape,
        state: CqlSinkState,
        run_id: str,
        concurrency: int = CONCURRENCY,
        chunk_rows: int = CHUNK_ROWS,
        peer: LakeRoot | None = None,
        on_applied: Callable[[Sequence[dict[str, Any]]], None] | None = None,
    ) -> None:
        """``peer``: the sink table's own changes in a lake (active-active);
        ``on_applied``: sees each chunk's applied log rows once they are acknowledged
        (the sandbox's CDC emulation logs them on the sink, as ScyllaDB would)."""
        self.client = client
        self.shape = shape
        self.state = state
        self.run_id = run_id
        self.concurrency = concurrency
        self.chunk_rows = chunk_rows
        self.peer = peer
        self.on_applied = on_applied
        self.rejected: list[dict[str, Any]] = []

    def apply(self, root: LakeRoot, plan: ApplyPlan) -> ApplyOutcome:
        outcome = ApplyOutcome()
        self.rejected = []
        changes = changes_in_range(root, plan)
        peer = peer_changes(self.peer, plan)
        progress = Progress(changes.num_rows, "changes", log.info, label=str(self.state.sink))
        for chunk in stream_chunks(changes, self.chunk_rows):
            streams = self._apply_chunk(chunk.to_pylist(), plan, peer, outcome)
            self.state.save_streams(streams, plan.until)
            outcome.streams += len(streams)
            progress.advance(chunk.num_rows)
        progress.finish()
        outcome.rejected = list(self.rejected)
        return outcome

    def _apply_chunk(
        self,
        rows: list[dict[str, Any]],
        plan: ApplyPlan,
        peer: frozenset[tuple[Any, ...]],
        outcome: ApplyOutcome,
    ) -> list[bytes]:
        work: list[tuple[Any, Any]] = []
        applied: list[dict[str, Any]] = []
        streams: list[bytes] = []
        for stream, stream_rows in groupby(rows, key=lambda r: r[STREAM_ID]):
            streams.append(stream)
            since = plan.stream_since(stream)
            for _, batch in groupby(stream_rows, key=lambda r: (r["write_time"], r[TIME])):
                changes = list(batch)
                if changes[0]["write_time"] < since:
                    continue  # applied by an interrupted run of this range
                if peer and all(fingerprint(c) in peer for c in changes):
                    outcome.peer_rows += len(changes)
                    continue  # the sink's own log holds it: it came from there
                item = self._batch(changes)
                if item is not None:
                    work.append(item)
                    applied.extend(changes)
                    outcome.log_rows += len(changes)
                    outcome.batches += 1
        self._execute(work, outcome)
        if self.on_applied is not None and applied:
            self.on_applied(applied)
        return streams

    def _batch(self, changes: Sequence[dict[str, Any]]) -> tuple[Any, Any] | None:
        """One CDC batch as one driver statement; None (and recorded) if refused."""
        from cassandra.query import BatchStatement, BatchType

        try:
            rows = [self.shape.driver_row(change) for change in changes]
            statements = batch_statements(
                self.shape.table, rows, to_micros(changes[0]["write_time"])
            )
        except ReplayError as exc:
            self._reject(changes[0], str(exc))
            return None
        if len(statements) == 1:
            return self._bound(statements[0], changes[0])
        batch = BatchStatement(batch_type=BatchType.UNLOGGED)
        for statement in statements:
            batch.add(self.client.prepared(statement.cql), statement.values)
        batch.is_idempotent = True
        return batch, changes[0]

    def _bound(self, statement: Statement, change: dict[str, Any]) -> tuple[Any, Any]:
        return self.client.prepared(statement.cql).bind(statement.values), change

    def _execute(self, work: list[tuple[Any, Any]], outcome: ApplyOutcome) -> None:
        outcome.statements += execute_all(self.client, work, self.concurrency, self._reject)

    def _reject(self, change: dict[str, Any], reason: str) -> None:
        record = {
            "write_time": change["write_time"],
            "cdc_time": change[TIME],
            "batch_seq_no": change[BATCH_SEQ_NO],
            "stream_id": change[STREAM_ID],
        }
        log.error("%s: change at %s not applied: %s", self.state.sink, change[TIME], reason)
        self.state.reject(record, reason, self.run_id)
        self.rejected.append(
            {
                "write_time": change["write_time"].isoformat(),
                "cdc_time": change[TIME],
                "stream_id": change[STREAM_ID].hex(),
                "reason": reason,
            }
        )


def execute_all(
    client: CqlClient,
    work: Sequence[tuple[Any, Any]],
    concurrency: int,
    refused: Callable[[Any, str], None],
) -> int:
    """Runs every ``(statement, what)``, many at a time, until each is acknowledged,
    retrying transient failures with backoff; one the sink refuses for its content
    (``InvalidRequest``) goes to ``refused`` with the sink's words. Returns how many
    were acknowledged."""
    from cassandra import InvalidRequest
    from cassandra.concurrent import execute_concurrent

    done = 0
    pending = list(work)
    for attempt in range(RETRIES + 1):
        results = execute_concurrent(
            client.session,
            [(statement, None) for statement, _ in pending],
            concurrency=concurrency,
            raise_on_first_error=False,
        )
        failed = []
        for (statement, what), (ok, result) in zip(pending, results, strict=True):
            if ok:
                done += 1
            elif isinstance(result, InvalidRequest):
                refused(what, f"the sink refused it: {result}")
            elif is_transient(result) and attempt < RETRIES:
                failed.append((statement, what))
            else:
                raise result
        if not failed:
            break
        log.warning("%d write(s) failed transiently; retrying", len(failed))
        time.sleep(BACKOFF_SECONDS * 2**attempt)
        pending = failed
    return done
