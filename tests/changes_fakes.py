"""In-memory fakes of the changes flow's ports, and wrappers that make a run fail part-way.

The fakes keep the rules the real adapters keep, so the orchestrator's decisions can be
checked fast and exhaustively (as scylla-cdc-java checks its master against a mock CQL):

* :class:`MemoryCheckpointStore`: checkpoints and the watermark only move forward, the
  earliest start wins, pruning drops generations the watermark implies (the CQL store
  gets this from value-derived write timestamps);
* :class:`MemoryChangesLake` over a :class:`MemoryChangeLog`: a write replaces exactly
  the ``(generation, window, bucket)`` partitions that received rows and nothing else
  (one commit replacing them, like ``replaceWhere``), a window without rows leaves no partition;
* :class:`FixedGenerations`, :class:`FixedClocks`: the spans and node clocks a test sets.

Every fake appends what it did to a shared :class:`Events` list, so tests can assert the
order of writes and checkpoints.

The fault wrappers work on real adapters too (the integration tests use them):
:class:`CheckpointsFailingAfter` is a driver killed after N checkpointed jobs,
:class:`ReadersFailingAfter` a Spark task dying after N streams; the latter travels to
Spark's Python workers, so this module is registered with cloudpickle by value there.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.clocks import NodeClock
from cdcgen.core.generation import Generation
from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.lake_buckets import LakeBuckets
from cdcgen.core.log_ttls import LogTtls, shortest
from cdcgen.core.topology import TopologyDescription
from cdcgen.core.watermark import BucketCheckpoint, TableProgress
from cdcgen.core.windows import GenerationSpan, LakeWindow, TableState, Window
from cdcgen.ports import ChangeLogReader, CheckpointStore, LakeCommit

#: A change as the fakes keep it: (stream, write time, batch_seq_no).
Change = tuple[bytes, datetime, int]


class InjectedFault(RuntimeError):
    """Raised on purpose by a fault wrapper (tests of kill-and-resume)."""


class Events(list[str]):
    """What the fakes did, in order (``write <buckets>``, ``save <n>``, ``remove ...``)."""

    def named(self, prefix: str) -> list[str]:
        return [e for e in self if e.startswith(prefix)]


# --- generation source and clocks -----------------------------------------------------------


class FixedGenerations:
    """The generation source of a table whose spans the test fixes."""

    def __init__(self, spans: Sequence[GenerationSpan]) -> None:
        self._spans = sorted(spans, key=lambda s: s.start)
        self.asked: list[tuple[datetime | None, datetime | None]] = []

    def list_generations(self) -> list[Generation]:
        return [Generation(s.start, s.id) for s in self._spans]

    def read_description(self, generation: Generation) -> TopologyDescription:
        raise NotImplementedError("the changes flow reads spans only")

    def read_arrays(self, generation: Generation) -> GenerationArrays:
        raise NotImplementedError("the changes flow reads spans only")

    def spans(
        self, table: TableRef, since: datetime | None = None, until: datetime | None = None
    ) -> list[GenerationSpan]:
        self.asked.append((since, until))
        return [
            s
            for s in self._spans
            if (since is None or s.end is None or s.end > since)
            and (until is None or s.start < until)
        ]


class FixedClocks:
    """Every node's clock at ``at`` (set it to move time on)."""

    def __init__(self, at: datetime, nodes: int = 3) -> None:
        self.at = at
        self.nodes = nodes

    def read_clocks(self) -> list[NodeClock]:
        return [NodeClock(f"n{i}", self.at) for i in range(self.nodes)]


# --- checkpoints ----------------------------------------------------------------------------


class MemoryCheckpointStore:
    """Checkpoints and progress in memory, with the CQL store's only-forward rules."""

    def __init__(self, events: Events | None = None) -> None:
        self.events = events if events is not None else Events()
        self._checkpoints: dict[tuple[TableRef, datetime, int], BucketCheckpoint] = {}
        self._started: dict[TableRef, datetime] = {}
        self._watermarks: dict[TableRef, tuple[datetime, str, int | None]] = {}
        self._ttls: dict[TableRef, tuple[datetime, LogTtls]] = {}

    def checkpoints(self, table: TableRef) -> list[BucketCheckpoint]:
        return [c for (t, _, _), c in sorted(self._checkpoints.items()) if t == table]

    def table_state(self, table: TableRef) -> TableState:
        progress = self.progress(table)
        return TableState(
            started_at=progress.started_at,
            watermark=progress.watermark,
            checkpoints={(c.generation, c.bucket): c.checkpoint for c in self.checkpoints(table)},
            log_ttls=progress.log_ttls,
        )

    def progress(self, table: TableRef) -> TableProgress:
        watermark, run_id, version = self._watermarks.get(table, (None, "", None))
        ttls = self._ttls[table][1] if table in self._ttls else None
        started = self._started.get(table)
        return TableProgress(table, started, watermark, watermark, run_id, version, None, ttls)

    def record_start(self, table: TableRef, started_at: datetime, run_id: str = "") -> None:
        self.events.append(f"start {started_at.isoformat()}")
        known = self._started.get(table)
        self._started[table] = started_at if known is None else min(known, started_at)

    def save(self, table: TableRef, checkpoints: Iterable[BucketCheckpoint]) -> int:
        saved = 0
        for checkpoint in checkpoints:
            key = (table, checkpoint.generation, checkpoint.bucket)
            known = self._checkpoints.get(key)
            if known is None or checkpoint.checkpoint > known.checkpoint:
                self._checkpoints[key] = checkpoint
            saved += 1
        self.events.append(f"save {saved}")
        return saved

    def save_watermark(
        self,
        table: TableRef,
        watermark: datetime,
        run_id: str = "",
        lake_version: int | None = None,
        log_ttls: LogTtls | None = None,
    ) -> None:
        self.events.append(f"watermark {watermark.isoformat()}")
        known = self._watermarks.get(table)
        if known is None or watermark > known[0]:
            self._watermarks[table] = (watermark, run_id, lake_version)
        if log_ttls is not None:  # a newer watermark's record; at the same, the cautious
            at, ttls = self._ttls.get(table, (watermark, log_ttls))
            if watermark > at:
                ttls = log_ttls
            elif watermark == at:  # each cell as Cassandra keeps it: shorter, later
                ttls = LogTtls(
                    shortest(ttls.before, log_ttls.before),
                    shortest(ttls.seen, log_ttls.seen),
                    max(ttls.since, log_ttls.since),
                )
            self._ttls[table] = (max(at, watermark), ttls)

    def prune(self, table: TableRef, generations: Sequence[GenerationSpan]) -> int:
        watermark = self.progress(table).watermark
        if watermark is None:
            return 0
        done = {g.start for g in generations if g.end is not None and g.end <= watermark}
        for key in [k for k in self._checkpoints if k[0] == table and k[1] in done]:
            del self._checkpoints[key]
        self.events.append(f"prune {len(done)}")
        return len(done)


class CheckpointsFailingAfter:
    """A checkpoint store whose driver dies right after its ``saves``-th save."""

    def __init__(self, store: CheckpointStore, saves: int) -> None:
        self._store = store
        self._left = saves

    def table_state(self, table: TableRef) -> TableState:
        return self._store.table_state(table)

    def progress(self, table: TableRef) -> TableProgress:
        return self._store.progress(table)

    def record_start(self, table: TableRef, started_at: datetime, run_id: str = "") -> None:
        self._store.record_start(table, started_at, run_id)

    def save(self, table: TableRef, checkpoints: Iterable[BucketCheckpoint]) -> int:
        saved = self._store.save(table, checkpoints)
        self._left -= 1
        if self._left <= 0:
            raise InjectedFault("injected fault: the driver died after a checkpointed job")
        return saved

    def save_watermark(
        self,
        table: TableRef,
        watermark: datetime,
        run_id: str = "",
        lake_version: int | None = None,
        log_ttls: LogTtls | None = None,
    ) -> None:
        self._store.save_watermark(table, watermark, run_id, lake_version, log_ttls)

    def prune(self, table: TableRef, generations: Sequence[GenerationSpan]) -> int:
        return self._store.prune(table, generations)


# --- the change log and the lake ------------------------------------------------------------


class MemoryChangeLog:
    """A CDC log table in memory: each stream's changes in clustering order."""

    def __init__(self, changes: Iterable[Change] = ()) -> None:
        self._streams: dict[bytes, list[Change]] = {}
        for change in changes:
            self.add(change)

    def add(self, change: Change) -> None:
        rows = self._streams.setdefault(change[0], [])
        rows.append(change)
        rows.sort(key=lambda c: (c[1], c[2]))

    def window(self, stream: bytes, start: datetime, end: datetime) -> list[Change]:
        return [c for c in self._streams.get(stream, ()) if start <= c[1] < end]

    def between(self, start: datetime, end: datetime) -> list[Change]:
        return sorted(c for rows in self._streams.values() for c in rows if start <= c[1] < end)


class MemoryChangesLake:
    """A table's lake as ``LakeWindow -> changes``, written from a :class:`MemoryChangeLog`.

    ``fail_on_write``: that write (1-based) dies before anything of it is committed, like
    a Spark job whose task failed. ``die_after_write``: that write commits, then the
    driver dies before it could checkpoint (its files are left unacknowledged).
    """

    def __init__(
        self,
        log: MemoryChangeLog,
        events: Events | None = None,
        *,
        fail_on_write: int = 0,
        die_after_write: int = 0,
    ) -> None:
        self.log = log
        self.events = events if events is not None else Events()
        self.partitions: dict[LakeWindow, list[Change]] = {}
        self.recorded_buckets: int | None = None
        self.writes = 0
        self.version_number = -1  # a Delta table's first commit is version 0
        self.history: dict[int, dict[LakeWindow, list[Change]]] = {}  # time travel
        self._fail_on_write = fail_on_write
        self._die_after_write = die_after_write

    @property
    def location(self) -> str:
        return "memory://lake"

    def buckets(self, wanted: int) -> LakeBuckets:
        if self.recorded_buckets is None:
            self.recorded_buckets = wanted
        return LakeBuckets(self.recorded_buckets)

    def windows(self) -> list[LakeWindow]:
        return sorted(self.partitions)

    def version(self) -> int | None:
        return None if self.version_number < 0 else self.version_number

    def remove(self, windows: Sequence[LakeWindow]) -> LakeCommit:
        for window in windows:
            self.events.append(f"remove {window.generation} {window.label} {window.bucket}")
            self.partitions.pop(window, None)
        return self._commit(Counter())

    def write(self, windows: Sequence[Window], replacing: Sequence[LakeWindow] = ()) -> LakeCommit:
        self.writes += 1
        if self.writes == self._fail_on_write:
            raise InjectedFault("injected fault: a read task died")
        staged: dict[LakeWindow, list[Change]] = {}
        counters: Counter[str] = Counter()
        for window in windows:
            for stream in window.streams:
                rows = self.log.window(stream.raw, window.start, window.end)
                counters["queries"] += 1
                if rows:
                    staged.setdefault(window.lake_window, []).extend(rows)
                    counters[f"rows:{window.generation.label}"] += len(rows)
        for window in replacing:  # the commit replaces these, rows or not
            self.events.append(f"remove {window.generation} {window.label} {window.bucket}")
        for window in [*replacing, *(w.lake_window for w in windows)]:
            self.partitions.pop(window, None)
        self.partitions.update(staged)  # a window without rows leaves no partition
        self.events.append(f"write {sorted({w.bucket for w in windows})}")
        commit = self._commit(counters)
        if self.writes == self._die_after_write:
            raise InjectedFault("injected fault: the driver died before checkpointing")
        return commit

    def revert(self, commit: LakeCommit) -> LakeCommit:
        assert commit.version == self.version_number, "another commit followed"
        previous = {} if commit.previous is None else self.history[commit.previous]
        self.partitions = {window: list(rows) for window, rows in previous.items()}
        self.events.append(f"revert {commit.version}")
        return self._commit(Counter())

    def _commit(self, counters: Counter[str]) -> LakeCommit:
        before = self.version()
        self.version_number += 1
        self.history[self.version_number] = {w: list(r) for w, r in self.partitions.items()}
        return LakeCommit(self.version_number, counters, before)

    def rows(self) -> list[Change]:
        return sorted(c for rows in self.partitions.values() for c in rows)


# --- readers inside Spark tasks -------------------------------------------------------------


class FailingReader:
    """A change-log reader that dies once it has read ``streams`` streams."""

    def __init__(self, reader: ChangeLogReader, streams: int) -> None:
        self._reader = reader
        self._left = streams

    @property
    def column_metadata(self) -> Sequence[Any]:
        return self._reader.column_metadata

    @property
    def protocol_version(self) -> int:
        return self._reader.protocol_version

    def pages(self, stream: bytes, start: datetime, end: datetime) -> Iterator[list[Any]]:
        yield from self._reader.pages(stream, start, end)
        self._left -= 1
        if self._left <= 0:
            raise InjectedFault("injected fault: a read task died after its streams")

    def count(self, stream: bytes, start: datetime, end: datetime) -> int:
        return self._reader.count(stream, start, end)

    def counters(self) -> Mapping[str, int]:
        return self._reader.counters()


class ReadersFailingAfter:
    """A reader factory whose readers die after ``streams`` streams (pickled to tasks)."""

    def __init__(self, readers: Any, streams: int) -> None:
        self._readers = readers
        self._streams = streams

    def __call__(self) -> ChangeLogReader:
        return FailingReader(self._readers(), self._streams)


def ship_to_spark_workers() -> None:
    """Let Spark's Python workers unpickle this module's classes (tests/ is not on their
    path): cloudpickle then sends the classes themselves, not a reference."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
