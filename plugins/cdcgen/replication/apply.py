"""Applying a table's changes from the lake to a sink, slice by slice, checkpointed.

A run reads the lake version that holds everything up to the watermark, in consecutive
time slices of bounded size (:mod:`cdcgen.replication.change_slices`), and replays each
slice's changes in time order, the statements of a CDC batch
(:func:`cdcgen.core.replication.batch_statements`) always in one request, many requests
at a time:

* a chunk's CDC batches of one partition key go out together (up to
  :data:`GROUP_BATCHES`, the rest in the next round), so a key's changes reach the sink
  in order, one request at a time;
* a round's groups are packed into unlogged batches of a few dozen CDC batches of one
  replica (:func:`pack_requests`): each partition's part of a batch is still applied
  atomically and in isolation, and the driver's per-request cost, which dominates a
  Python client's, is paid once per request instead of once per change.

Once every request of a slice is acknowledged, the sink's consistency point moves to the
slice's end; a run killed before that re-applies the slice, which changes nothing, since
every write carries its original timestamp. Transient write failures (a node down, a
timeout) are retried with backoff; a change the sink refuses, or the model cannot
express, is recorded on the sink (``cdc_replication_rejects``) before the consistency
point moves past it, and named in the run's result: never dropped in silence.

TTLs count down on the sink's clock (:class:`SinkClock`): the largest of its nodes'
clocks, so that a replayed cell does not outlive its source (but for the wait of a
request retried after a timeout, which carries the TTL computed before it).

With a ``peer`` (active-active), batches the sink's own log already holds are skipped
(:mod:`cdcgen.replication.peers`).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from itertools import groupby
from typing import TYPE_CHECKING, Any, Protocol

from cdcgen.adapters.clocks import CqlClockReader
from cdcgen.adapters.cql import RETRIES, RETRY_BACKOFF_SECONDS
from cdcgen.adapters.errors import is_transient
from cdcgen.core.cdc_log import BATCH_SEQ_NO, OPERATION, STREAM_ID, TIME, operation_name
from cdcgen.core.errors import TransientError
from cdcgen.core.replication import ReplayError, batch_statements
from cdcgen.core.replication_plan import ApplyPlan
from cdcgen.core.time import from_micros, to_micros
from cdcgen.extract.description_columns import paused_collections
from cdcgen.progress import Progress
from cdcgen.replication.change_slices import (
    WRITE_TIME_US,
    ChangeSlice,
    LakeSource,
    as_logged,
    batch_chunks,
    change_slices,
    log_rows,
)
from cdcgen.replication.peers import fingerprint, peer_fingerprints
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.replication.sink_schema import SinkShape
from cdcgen.replication.sink_state import CqlSinkState

if TYPE_CHECKING:
    import pyarrow as pa

    from cdcgen.adapters.cql import CqlClient
    from cdcgen.adapters.lake_store import LakeRoot

log = logging.getLogger(__name__)


class SinkClockUnreadable(TransientError):
    """Transient: no node of the sink answered with its clock."""


class SinkClock:
    """The sink's time in microseconds: its nodes' latest clock, read once, carried
    forward by this process's monotonic clock."""

    def __init__(self, client: CqlClient) -> None:
        readings = [c.reading for c in CqlClockReader(client).read_clocks()]
        known = [r for r in readings if r is not None]
        if not known:
            raise SinkClockUnreadable("no node of the sink answered with its clock")
        self._at = to_micros(max(known))
        self._read = time.monotonic()

    def now_us(self) -> int:
        return self._at + int((time.monotonic() - self._read) * 1_000_000)


#: Rejected changes a run keeps in memory and in its record (all are in the sink's
#: ``cdc_replication_rejects``).
REJECTS_KEPT = 100
#: CDC batches of one partition key sent in one round, at most.
GROUP_BATCHES = 16


@dataclass(frozen=True)
class Replay:
    """One CDC batch's statements (bound), its partition key and first log row, the
    replica its partition lives on and about how many bytes its values take."""

    key: str
    statements: list[Any]
    change: dict[str, Any]
    replica: str = ""
    size: int = 0


def key_rounds(replays: Sequence[Replay], group: int) -> list[list[list[Replay]]]:
    """The CDC batches as rounds of requests: each request groups up to ``group``
    consecutive batches of one partition key, and a key's next request waits for the
    next round, so each key's changes reach the sink in order, one request at a time."""
    by_key: dict[str, list[Replay]] = {}
    for replay in replays:
        by_key.setdefault(replay.key, []).append(replay)
    rounds: list[list[list[Replay]]] = []
    for batches in by_key.values():
        for number, first in enumerate(range(0, len(batches), group)):
            if number == len(rounds):
                rounds.append([])
            rounds[number].append(batches[first : first + group])
    return rounds


def pack_requests(round_: Sequence[list[Replay]], batches: int, size: int
                  ) -> list[list[Replay]]:  # fmt: skip
    """A round's groups (one partition key each) packed into requests of at most
    ``batches`` CDC batches and about ``size`` bytes, the groups of one replica together
    (so a request's coordinator holds every partition it writes); a group over either
    bound is a request of its own."""
    requests: list[list[Replay]] = []
    current: list[Replay] = []
    replica, count, bytes_ = "", 0, 0
    for group in sorted(round_, key=lambda g: g[0].replica):
        weight = sum(r.size for r in group)
        full = count + len(group) > batches or bytes_ + weight > size
        if current and (full or group[0].replica != replica):
            requests.append(current)
            current, count, bytes_ = [], 0, 0
        current.extend(group)
        replica, count, bytes_ = group[0].replica, count + len(group), bytes_ + weight
    if current:
        requests.append(current)
    return requests


@dataclass
class ApplyOutcome:
    """What one run applied."""

    log_rows: int = 0
    #: Log rows skipped because the sink's own log already holds them (active-active).
    peer_rows: int = 0
    batches: int = 0
    requests: int = 0
    slices: int = 0
    #: The largest slice (rows of the table and of its peer together).
    largest_slice: int = 0
    #: Log rows applied, by operation (``insert``, ``range_delete_start_inclusive``, ...).
    operations: Counter[str] = field(default_factory=Counter)
    #: The first :data:`REJECTS_KEPT` changes not applied, and how many in all.
    rejected: list[dict[str, Any]] = field(default_factory=list)
    rejected_count: int = 0

    def add(self, other: ApplyOutcome) -> None:
        """Counts in ``other`` (one Spark task's) added to these; slices and the largest
        slice are the driver's to count."""
        self.log_rows += other.log_rows
        self.peer_rows += other.peer_rows
        self.batches += other.batches
        self.requests += other.requests
        self.operations.update(other.operations)
        self.rejected.extend(other.rejected[: max(0, REJECTS_KEPT - len(self.rejected))])
        self.rejected_count += other.rejected_count


class SliceApply(Protocol):
    """Applies one slice elsewhere than this process (:mod:`.spark_apply`): every change
    of it acknowledged by the sink, or an exception, when it returns."""

    def apply(self, part: ChangeSlice) -> ApplyOutcome: ...


class SinkApplier:
    """Applies one table's changes to one sink table, slice by slice."""

    def __init__(
        self,
        client: CqlClient,
        shape: SinkShape,
        state: CqlSinkState,
        run_id: str,
        settings: ReplicationSettings,
        peer: LakeRoot | None = None,
        on_applied: Callable[[Sequence[dict[str, Any]]], None] | None = None,
        elsewhere: SliceApply | None = None,
    ) -> None:
        """``peer``: the sink table's own changes in a lake (active-active);
        ``on_applied``: sees each chunk's applied log rows once they are acknowledged
        (the sandbox's CDC emulation logs them on the sink, as ScyllaDB would);
        ``elsewhere``: applies each slice instead of this process (Spark executors)."""
        if elsewhere is not None and on_applied is not None:
            raise ValueError("on_applied sees changes applied in this process only")
        self.client = client
        self.shape = shape
        self.state = state
        self.run_id = run_id
        self.settings = settings
        self.peer = peer
        self.on_applied = on_applied
        self.elsewhere = elsewhere
        self.consistency = client.state_consistency  # the sink's rows are the pipeline's
        self.rejected: list[dict[str, Any]] = []
        self.rejected_count = 0
        self._one_node = False

    def apply(self, root: LakeRoot, plan: ApplyPlan) -> ApplyOutcome:
        """Every change of the plan; the consistency point follows each applied slice."""
        outcome = ApplyOutcome()
        self.rejected, self.rejected_count = [], 0
        clock = SinkClock(self.client)
        progress = Progress(None, "changes", log.info, label=str(self.state.sink))
        slices = change_slices(
            LakeSource(root, plan.lake_version),
            plan.since,
            plan.until,
            self.settings.slice_rows,
            peer=None if self.peer is None else LakeSource(self.peer),
            spill_dir=self.settings.spill_dir,
        )
        with closing(slices):  # its spill folder goes even when an apply fails
            for part in slices:
                size = part.changes.num_rows + (0 if part.peer is None else part.peer.num_rows)
                outcome.largest_slice = max(outcome.largest_slice, size)
                if self.elsewhere is not None:
                    outcome.add(self.elsewhere.apply(part))
                else:
                    self.apply_slice(part.changes, part.peer, outcome, clock)
                progress.advance(part.changes.num_rows)
                self.state.save_progress(part.until, self.run_id, plan.lake_version)
                outcome.slices += 1
        progress.finish()
        if self.elsewhere is None:
            outcome.rejected, outcome.rejected_count = list(self.rejected), self.rejected_count
        return outcome

    def apply_slice(
        self, changes: pa.Table, peer: pa.Table | None, outcome: ApplyOutcome, clock: SinkClock
    ) -> None:
        """Every change of a slice, or of a part of it holding all the changes of its
        partition keys (in time order), chunk by chunk, never cutting a CDC batch; the
        batches ``peer`` holds are skipped; rejects are added to this applier's."""
        fingerprints = peer_fingerprints(peer)
        for chunk in batch_chunks(changes, self.settings.chunk_rows):
            self.apply_rows(log_rows(chunk), fingerprints, outcome, clock)

    def apply_rows(
        self,
        rows: list[dict[str, Any]],
        peer: frozenset[tuple[Any, ...]],
        outcome: ApplyOutcome,
        clock: SinkClock,
    ) -> None:
        """``rows`` (of :func:`~cdcgen.replication.change_slices.log_rows`, whole CDC
        batches in time order) replayed; returns once every request is acknowledged."""
        replays: list[Replay] = []
        applied: list[dict[str, Any]] = []
        operations: Counter[int] = Counter()
        now_us = clock.now_us()
        self._one_node = self.client.node_count == 1
        settings = self.settings
        # Building a chunk's requests makes hundreds of thousands of objects and no cycle:
        # collections meanwhile would walk them all again and again.
        with paused_collections():
            for _, batch in groupby(rows, key=lambda r: (r[STREAM_ID], r[WRITE_TIME_US], r[TIME])):
                changes = list(batch)
                if peer and all(fingerprint(c) in peer for c in changes):
                    outcome.peer_rows += len(changes)
                    continue  # the sink's own log holds it: it came from there
                replay = self._replay(changes, now_us)
                if replay is not None:
                    replays.append(replay)
                    if self.on_applied is not None:
                        applied.extend(changes)
                    outcome.log_rows += len(changes)
                    outcome.batches += 1
                    operations.update(c[OPERATION] for c in changes)
            rounds = [
                [(self._request(request), request) for request in packed]
                for round_ in key_rounds(replays, GROUP_BATCHES)
                for packed in [
                    pack_requests(round_, settings.request_batches, settings.request_bytes)
                ]
            ]
        outcome.operations.update(
            {str(operation_name(code)): count for code, count in operations.items()}
        )
        for work in rounds:
            outcome.requests += execute_all(self.client, work, settings.concurrency, self._refused)
        if self.on_applied is not None and applied:
            self.on_applied([as_logged(row) for row in applied])

    def _replay(self, changes: Sequence[dict[str, Any]], now_us: int) -> Replay | None:
        """One CDC batch's statements; None when it has none (images only) or cannot be
        replayed (then recorded as rejected)."""
        try:
            rows = [self.shape.driver_row(change) for change in changes]
            written = changes[0][WRITE_TIME_US]
            statements = batch_statements(self.shape.table, rows, written, now_us=now_us)
        except ReplayError as exc:
            self._reject(changes[0], str(exc))
            return None
        if not statements:
            return None
        key = repr(tuple(changes[0].get(c) for c in self.shape.table.partition_key))
        bound = [self.client.prepared(s.cql).bind(s.values) for s in statements]
        size = sum(len(v) for b in bound for v in b.values if isinstance(v, bytes))
        return Replay(key, bound, changes[0], self._replica(bound[0]), size)

    def _replica(self, statement: Any) -> str:
        """The first replica of a bound statement's partition ("" when unknown)."""
        if self._one_node:
            return ""  # one node holds every partition
        metadata = self.client.cluster.metadata
        token_map = metadata.token_map
        if token_map is None or statement.routing_key is None:
            return ""
        token = token_map.token_class.from_key(statement.routing_key)
        replicas = token_map.get_replicas(self.shape.table.keyspace, token)
        return str(replicas[0].address) if replicas else ""

    def _request(self, replays: Sequence[Replay]) -> Any:
        """One request for CDC batches (each single-partition: applied atomically and in
        isolation whatever shares the request)."""
        from cassandra.query import BatchStatement, BatchType

        statements = [s for replay in replays for s in replay.statements]
        if len(statements) == 1:
            return statements[0]
        # A batch has a consistency level of its own (its statements' are ignored).
        batch = BatchStatement(batch_type=BatchType.UNLOGGED, consistency_level=self.consistency)
        for statement in statements:
            batch.add(statement)
        batch.is_idempotent = True
        return batch

    def _refused(self, group: Sequence[Replay], reason: str) -> None:
        """A request the sink refused (a value, or the whole request's size): each CDC
        batch of it alone, to name which."""
        if len(group) == 1:
            self._reject(group[0].change, reason)
            return
        alone = [(self._request([replay]), [replay]) for replay in group]
        execute_all(self.client, alone, self.settings.concurrency, self._refused)

    def _reject(self, change: dict[str, Any], reason: str) -> None:
        record = {
            "write_time": from_micros(change[WRITE_TIME_US]),
            "cdc_time": change[TIME],
            "batch_seq_no": change[BATCH_SEQ_NO],
            "stream_id": change[STREAM_ID],
        }
        log.error("%s: change at %s not applied: %s", self.state.sink, change[TIME], reason)
        self.state.reject(record, reason, self.run_id)
        self.rejected_count += 1
        if len(self.rejected) >= REJECTS_KEPT:
            return  # all are on the sink; the record names the first ones
        self.rejected.append(
            {
                "write_time": from_micros(change[WRITE_TIME_US]).isoformat(),
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
        time.sleep(RETRY_BACKOFF_SECONDS * 2**attempt)
        pending = failed
    return done
