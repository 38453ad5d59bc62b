"""Applying a table's changes from the lake to a sink, slice by slice, checkpointed.

A run reads the lake version that holds everything up to the watermark, in consecutive
time slices of bounded size (:class:`cdcgen.ports.LakeChanges`), and replays each
slice's changes in time order, a chunk at a time: each chunk's rows are read once into a
:class:`~cdcgen.core.change_batch.ChangeBatch`, each CDC batch of it becomes its
mutations (:mod:`cdcgen.core.operations`) and their statements
(:mod:`cdcgen.core.sink_statements`), always in one request, many requests at a time
(:class:`cdcgen.ports.SinkWrites`):

* a chunk's CDC batches of one partition key go out together (up to
  :data:`GROUP_BATCHES`, the rest in the next round), so a key's changes reach the sink
  in order, one request at a time;
* a round's groups are packed into unlogged batches of a few dozen CDC batches of one
  replica (:func:`pack_requests`): each partition's part of a batch is still applied
  atomically and in isolation, and the driver's per-request cost, which dominates a
  Python client's, is paid once per request instead of once per change.

Once every request of a slice is acknowledged, the sink's consistency point moves to the
slice's end; a run killed before that re-applies the slice, which changes nothing, since
every write carries its original timestamp. A change the sink refuses, or the model
cannot express, is recorded on the sink (:meth:`cdcgen.ports.SinkState.reject`) before
the consistency point moves past it, and named in the run's result: never dropped in
silence. A refused request of several CDC batches is sent again batch by batch, to name
which.

TTLs count down on the sink's clock (:class:`SinkClock`), read once per run.

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
from typing import TYPE_CHECKING, Protocol

from cdcgen.core.cdc_log import TableRef, operation_name
from cdcgen.core.change_batch import ChangeBatch, ChangeId
from cdcgen.core.frozen import frozen_value
from cdcgen.core.gc_pause import paused_collections
from cdcgen.core.operations.decode import mutations
from cdcgen.core.operations.errors import ReplayError
from cdcgen.core.replication_plan import ApplyPlan
from cdcgen.core.replication_record import RejectedEntry
from cdcgen.core.sink_statements import statements
from cdcgen.core.time import from_micros
from cdcgen.ports import ChangeSlice, LakeChanges, SinkBatch, SinkState, SinkWrites
from cdcgen.progress import Progress
from cdcgen.replication.change_slices import batch_chunks
from cdcgen.replication.peers import Fingerprint, fingerprints, peer_fingerprints
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.replication.sink_schema import SinkShape

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

#: Rejected changes a run keeps in memory and in its record (all are on the sink).
REJECTS_KEPT = 100
#: CDC batches of one partition key sent in one round, at most.
GROUP_BATCHES = 16

#: Sees each chunk's applied log rows (lake columns) once the sink acknowledged them.
AppliedHook = Callable[["pa.Table"], None]


class SinkClock:
    """The sink's time in microseconds: read once, carried forward by this process's
    monotonic clock."""

    def __init__(self, writes: SinkWrites) -> None:
        self._at = writes.clock_us()
        self._read = time.monotonic()

    def now_us(self) -> int:
        return self._at + int((time.monotonic() - self._read) * 1_000_000)


@frozen_value
class Replay:
    """One CDC batch bound for the sink: its partition key (as text), its statements,
    and the first log row, which names it."""

    key: str
    batch: SinkBatch
    change: ChangeId

    @property
    def replica(self) -> str:
        return self.batch.replica

    @property
    def size(self) -> int:
        return self.batch.size


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
    rejected: list[RejectedEntry] = field(default_factory=list)
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
        writes: SinkWrites,
        shape: SinkShape,
        state: SinkState,
        run_id: str,
        settings: ReplicationSettings,
        on_applied: AppliedHook | None = None,
        elsewhere: SliceApply | None = None,
    ) -> None:
        """``on_applied``: sees each chunk's applied log rows once they are acknowledged
        (the sandbox's CDC emulation logs them on the sink, as ScyllaDB would);
        ``elsewhere``: applies each slice instead of this process (Spark executors)."""
        if elsewhere is not None and on_applied is not None:
            raise ValueError("on_applied sees changes applied in this process only")
        self.writes = writes
        self.shape = shape
        self.state = state
        self.run_id = run_id
        self.settings = settings
        self.on_applied = on_applied
        self.elsewhere = elsewhere
        self.rejected: list[RejectedEntry] = []
        self.rejected_count = 0

    def apply(self, lake: LakeChanges, plan: ApplyPlan, peer: TableRef | None = None
              ) -> ApplyOutcome:  # fmt: skip
        """Every change of the plan; the consistency point follows each applied slice.
        ``peer``: the sink table, when the lake holds its own changes (active-active)."""
        outcome = ApplyOutcome()
        self.rejected, self.rejected_count = [], 0
        clock = SinkClock(self.writes)
        progress = Progress(None, "changes", log.info, label=str(self.state.sink))
        slices = lake.slices(self.state.source, plan.lake_version, plan.since, plan.until, peer)
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
        held = peer_fingerprints(peer)
        for chunk in batch_chunks(changes, self.settings.chunk_rows):
            self.apply_chunk(chunk, held, outcome, clock)

    def apply_chunk(
        self,
        chunk: pa.Table,
        peer: frozenset[Fingerprint],
        outcome: ApplyOutcome,
        clock: SinkClock,
    ) -> None:
        """``chunk`` (whole CDC batches in time order) replayed; returns once every
        request is acknowledged."""
        batch = self.shape.batch_of(chunk)
        held = fingerprints(chunk) if peer else None
        replays: list[Replay] = []
        applied: list[int] = []
        operations: Counter[int] = Counter()
        now_us = clock.now_us()
        settings = self.settings
        # Building a chunk's requests makes hundreds of thousands of objects and no cycle:
        # collections meanwhile would walk them all again and again.
        with paused_collections():
            for rows in batch.cdc_batches():
                if held is not None and all(held[row] in peer for row in rows):
                    outcome.peer_rows += len(rows)
                    continue  # the sink's own log holds it: it came from there
                replay = self._replay(batch, rows, now_us)
                if replay is not None:
                    replays.append(replay)
                    if self.on_applied is not None:
                        applied.extend(rows)
                    outcome.log_rows += len(rows)
                    outcome.batches += 1
                    operations.update(batch.operation[row] for row in rows)
            rounds = [
                pack_requests(round_, settings.request_batches, settings.request_bytes)
                for round_ in key_rounds(replays, GROUP_BATCHES)
            ]
        outcome.operations.update(
            {str(operation_name(code)): count for code, count in operations.items()}
        )
        for requests in rounds:
            outcome.requests += self._send(requests)
        if self.on_applied is not None and applied:
            import pyarrow as pa

            self.on_applied(chunk.take(pa.array(applied, pa.int64())))

    def _replay(self, batch: ChangeBatch, rows: range, now_us: int) -> Replay | None:
        """One CDC batch bound for the sink; None when it has no statement (images only)
        or cannot be replayed (then recorded as rejected)."""
        table = self.shape.table
        try:
            parts = mutations(table, batch, rows)
            replayed = statements(table, parts, now_us=now_us)
        except ReplayError as exc:
            self._reject(batch.change_id(rows.start), str(exc))
            return None
        if not replayed:
            return None
        key = repr(parts[0].key[: len(table.partition_key)])  # every part's partition
        bound = self.writes.bind(table.keyspace, replayed)
        return Replay(key, bound, batch.change_id(rows.start))

    def _send(self, requests: Sequence[Sequence[Replay]]) -> int:
        """Every request acknowledged, but those the sink refused, whose CDC batches are
        each sent again alone to name which it refuses; how many were acknowledged."""
        refusals = self.writes.execute([[replay.batch for replay in r] for r in requests])
        for refusal in refusals:
            group = requests[refusal.request]
            if len(group) == 1:
                self._reject(group[0].change, refusal.reason)
            else:
                self._send([[replay] for replay in group])
        return len(requests) - len(refusals)

    def _reject(self, change: ChangeId, reason: str) -> None:
        log.error("%s: change at %s not applied: %s", self.state.sink, change.cdc_time, reason)
        self.state.reject(change, reason, self.run_id)
        self.rejected_count += 1
        if len(self.rejected) >= REJECTS_KEPT:
            return  # all are on the sink; the record names the first ones
        self.rejected.append(
            RejectedEntry(
                write_time=from_micros(change.write_time_us).isoformat(),
                cdc_time=change.cdc_time,
                stream_id=change.stream_id.hex(),
                reason=reason,
            )
        )
