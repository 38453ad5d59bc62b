"""In-memory fakes of a replication run's ports, so the apply's and the run's decisions
can be checked fast and exhaustively.

The fakes keep the rules the real adapters keep:

* :class:`MemorySinkWrites`: a request is acknowledged whole or refused whole (an
  ``InvalidRequest``: a value the test marks refused, or more bytes than its limit); a
  CDC batch's statements travel together; the clock is the test's;
* :class:`MemorySinkState`: the consistency point only moves forward (the CQL state is
  written ``USING TIMESTAMP`` of its value), rejects are kept, a copy's ranges recorded;
* :class:`MemoryLake`: a table's lake rows, cut into the test's slices by write time,
  each in the order the real reader gives (write time, stream, ``cdc$time``,
  ``cdc$batch_seq_no``);
* :class:`MemoryTables`, :class:`MemoryCheckpoints`, :class:`FixedClocks`,
  :class:`MemorySpark`: definitions, the lake's coverage, node clocks and a copy.

Every fake appends what it did to a shared :class:`Events` list, so tests can assert the
order of writes and consistency points.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import pyarrow as pa
from changes_fakes import InjectedFault

from cdcgen.core.cdc_log import (
    BATCH_SEQ_NO,
    END_OF_BATCH,
    OPERATION,
    STREAM_ID,
    TIME,
    TTL,
    Operation,
    TableRef,
    deleted_column,
    deleted_elements_column,
)
from cdcgen.core.change_batch import WRITE_TIME, ChangeId
from cdcgen.core.clocks import NodeClock
from cdcgen.core.copy_progress import CopiedRange, CopyProgress
from cdcgen.core.replication_plan import SinkProgress
from cdcgen.core.sink_statements import Statement
from cdcgen.core.table_definition import TableDefinition
from cdcgen.core.time import from_micros, to_micros
from cdcgen.core.token_ranges import TokenRange
from cdcgen.core.watermark import TableProgress
from cdcgen.ports import ChangeSlice, ClusterIdentity, Refusal, SinkBatch
from cdcgen.replication.apply import SliceApply
from cdcgen.replication.replication_run import Replication, ReplicationPorts
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.replication.sink_schema import SinkShape

SOURCE, SINK = TableRef("shop", "orders"), TableRef("shop_dr", "orders")
T0 = datetime(2026, 12, 1, tzinfo=UTC)
#: The lake's columns of ``shop.orders (pk int, ck int, v text, tags set<text>)``.
LAKE_SCHEMA = pa.schema(
    [
        (STREAM_ID, pa.binary()),
        (TIME, pa.string()),
        (BATCH_SEQ_NO, pa.int32()),
        (OPERATION, pa.int8()),
        (TTL, pa.int64()),
        (END_OF_BATCH, pa.bool_()),
        ("pk", pa.int32()),
        ("ck", pa.int32()),
        ("v", pa.string()),
        (deleted_column("v"), pa.bool_()),
        ("tags", pa.list_(pa.string())),
        (deleted_column("tags"), pa.bool_()),
        (deleted_elements_column("tags"), pa.list_(pa.string())),
        (WRITE_TIME, pa.timestamp("us", tz="UTC")),
    ]
)


class Events(list[str]):
    """What the fakes did, in order (``execute <n> requests``, ``save <time>``, ...)."""

    def named(self, prefix: str) -> list[str]:
        return [e for e in self if e.startswith(prefix)]


# --- lake rows --------------------------------------------------------------------------


@dataclass
class LogRows:
    """Log rows a test writes, one CDC batch at a time (its rows share a ``cdc$time``)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    batches: int = 0

    def batch(self, at: datetime, *changes: Mapping[str, Any], stream: int = 1) -> str:
        """One CDC batch at ``at``: each change a row (``op`` and columns); its time."""
        self.batches += 1
        time = f"t{self.batches:06d}"
        for number, change in enumerate(changes):
            values = dict(change)
            operation = values.pop("op", Operation.UPDATE)
            self.rows.append(
                {STREAM_ID: bytes([stream]) * 16, TIME: time, BATCH_SEQ_NO: number,
                 OPERATION: int(operation), TTL: values.pop("ttl", None),
                 END_OF_BATCH: number == len(changes) - 1, WRITE_TIME: at, **values}
            )  # fmt: skip
        return time

    def update(self, at: datetime, pk: int, ck: int, v: str, **more: Any) -> str:
        return self.batch(at, {"pk": pk, "ck": ck, "v": v, **more})

    def table(self) -> pa.Table:
        return pa.Table.from_pylist(self.rows, LAKE_SCHEMA)


def ordered(table: pa.Table) -> pa.Table:
    order = [(WRITE_TIME, "ascending"), (STREAM_ID, "ascending"), (TIME, "ascending")]
    return table.sort_by([*order, (BATCH_SEQ_NO, "ascending")])


class MemoryLake:
    """Lake rows of each table; a range is cut at ``edges`` (and its own ends) into
    slices."""

    def __init__(self, events: Events, edges: Sequence[datetime] = ()) -> None:
        self.events = events
        self.tables: dict[TableRef, pa.Table] = {}
        self.edges = list(edges)
        self.types: dict[TableRef, dict[str, pa.DataType]] = {}

    def put(self, table: TableRef, rows: pa.Table) -> None:
        self.tables[table] = rows
        self.types[table] = {f.name: f.type for f in rows.schema}

    def column_types(self, table: TableRef) -> dict[str, pa.DataType]:
        return dict(self.types.get(table, {}))

    def slices(
        self,
        table: TableRef,
        version: int | None,
        since: datetime,
        until: datetime,
        peer: TableRef | None = None,
    ) -> Generator[ChangeSlice, None, None]:
        cuts = [since, *(e for e in self.edges if since < e < until), until]
        for low, high in pairwise(cuts):
            changes = self._between(table, low, high)
            if changes is None:
                return
            held = None if peer is None else self._between(peer, low, high)
            self.events.append(f"slice {low.isoformat()}")
            yield ChangeSlice(low, high, changes, held)

    def _between(self, table: TableRef, low: datetime, high: datetime) -> pa.Table | None:
        rows = self.tables.get(table)
        if rows is None:
            return None
        times = [to_micros(t) for t in rows.column(WRITE_TIME).to_pylist()]
        keep = [to_micros(low) <= t < to_micros(high) for t in times]
        return ordered(rows.filter(pa.array(keep, pa.bool_())))


# --- the sink ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Sent:
    """One request as the sink received it: its CDC batches' statements."""

    batches: tuple[tuple[Any, ...], ...]

    @property
    def statements(self) -> list[Statement]:
        return [s for batch in self.batches for s in batch]


class MemorySinkWrites:
    """The sink's writes: one replica, the test's clock, and requests acknowledged or
    refused whole."""

    def __init__(
        self,
        events: Events,
        now: datetime = T0 + timedelta(days=1),
        *,
        refuse: Callable[[Statement], bool] = lambda _: False,
        max_bytes: int | None = None,
        fail_after: int | None = None,
    ) -> None:
        """``refuse``: the statements the sink refuses; ``max_bytes``: the largest request
        it takes; ``fail_after``: requests acknowledged before the sink fails (a node
        down past every retry)."""
        self.events = events
        self.now = now
        self.refuse = refuse
        self.max_bytes = max_bytes
        self.fail_after = fail_after
        self.sent: list[Sent] = []
        self.calls: list[list[Sent]] = []
        self.clock_reads = 0

    def clock_us(self) -> int:
        self.clock_reads += 1
        return to_micros(self.now)

    def bind(self, keyspace: str, statements: Sequence[Statement]) -> SinkBatch:
        size = sum(len(str(v)) for s in statements for v in s.values)
        return SinkBatch(tuple(statements), "", size)

    def execute(self, requests: Sequence[Sequence[SinkBatch]]) -> list[Refusal]:
        refused: list[Refusal] = []
        call: list[Sent] = []
        for number, request in enumerate(requests):
            sent = Sent(tuple(tuple(b.bound) for b in request))
            if any(self.refuse(s) for s in sent.statements):
                refused.append(Refusal(number, "the sink refused it: a bad value"))
                continue
            if self.max_bytes is not None and sum(b.size for b in request) > self.max_bytes:
                refused.append(Refusal(number, "the sink refused it: batch too large"))
                continue
            if self.fail_after is not None and len(self.sent) >= self.fail_after:
                raise InjectedFault("injected fault: the sink stopped answering")
            self.sent.append(sent)
            call.append(sent)
        self.calls.append(call)
        self.events.append(f"execute {len(call)}")
        return refused


class MemorySinkState:
    """One sink table's state: a consistency point that only moves forward."""

    def __init__(self, events: Events, source: TableRef = SOURCE, sink: TableRef = SINK) -> None:
        self.events = events
        self.source = source
        self.sink = sink
        self.created = False
        self.point = SinkProgress(source, sink)
        self.rejected: list[tuple[ChangeId, str, str]] = []
        self.copy: CopyProgress | None = None

    def ensure_schema(self) -> None:
        self.created = True
        self.events.append("ensure_schema")

    def exists(self) -> bool:
        return self.created

    def progress(self) -> SinkProgress:
        return self.point

    def save_progress(
        self,
        consistent_until: datetime,
        run_id: str,
        lake_version: int | None = None,
        bootstrapped_at: datetime | None = None,
    ) -> None:
        self.events.append(f"save {consistent_until.isoformat()}")
        current = self.point.consistent_until
        if current is not None and consistent_until < current:
            return
        self.point = replace(
            self.point,
            consistent_until=consistent_until,
            lake_version=lake_version,
            run_id=run_id,
            bootstrapped_at=bootstrapped_at or self.point.bootstrapped_at,
        )

    def reject(self, change: ChangeId, reason: str, run_id: str) -> None:
        self.events.append(f"reject {change.cdc_time}")
        self.rejected.append((change, reason, run_id))

    def start_copy(self, snapshot_at: datetime, truncate: bool, run_id: str) -> None:
        self.events.append(f"start_copy {snapshot_at.isoformat()}")
        self.copy = CopyProgress(snapshot_at, truncate, run_id)

    def copy_progress(self) -> CopyProgress | None:
        return self.copy

    def record_copied_range(
        self, snapshot_at: datetime, tokens: TokenRange, rows: int, run_id: str
    ) -> None:
        assert self.copy is not None and self.copy.snapshot_at == snapshot_at
        done = (*self.copy.done, CopiedRange(tokens, rows, run_id))
        self.copy = replace(self.copy, done=done)

    def end_copy(self, snapshot_at: datetime) -> None:
        self.events.append("end_copy")
        self.copy = None


class MemorySinkStates:
    def __init__(self, events: Events) -> None:
        self.events = events
        self.tables: dict[tuple[TableRef, TableRef], MemorySinkState] = {}

    def state(self, source: TableRef, sink: TableRef) -> MemorySinkState:
        key = (source, sink)
        if key not in self.tables:
            self.tables[key] = MemorySinkState(self.events, source, sink)
        return self.tables[key]


# --- the clusters' tables, the lake's coverage, clocks, Spark ---------------------------


class MemoryTables:
    """One cluster's table definitions; columns added as asked."""

    def __init__(
        self, events: Events, definitions: Sequence[TableDefinition], name: str = "cluster"
    ) -> None:
        self.events = events
        self.definitions = {d.ref: d for d in definitions}
        self.name = name
        self.hosts = frozenset({f"{name}-host"})
        self.rows: dict[TableRef, int] = {}

    def identity(self) -> ClusterIdentity:
        return ClusterIdentity(self.name, self.hosts)

    def definition(self, table: TableRef) -> TableDefinition | None:
        return self.definitions.get(table)

    def add_column(self, table: TableRef, column: str, cql_type: str, static: bool) -> None:
        self.events.append(f"add_column {table} {column}")
        current = self.definitions[table]
        self.definitions[table] = replace(
            current,
            types={**current.types, column: cql_type},
            static=current.static | ({column} if static else set()),
        )

    def is_empty(self, table: TableRef, key_column: str) -> bool:
        return not self.rows.get(table)


class MemoryCheckpoints:
    """How far the lake holds each table (the changes pipeline's progress)."""

    def __init__(self) -> None:
        self.tables: dict[TableRef, TableProgress] = {}

    def covers(self, table: TableRef, since: datetime, until: datetime, version: int = 1) -> None:
        self.tables[table] = TableProgress(table, since, until, until, "changes", version)

    def progress(self, table: TableRef) -> TableProgress:
        return self.tables.get(table, TableProgress(table, None, None, None, ""))

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"a replication run does not call CheckpointStore.{name}")


class FixedClocks:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def read_clocks(self) -> list[NodeClock]:
        return [NodeClock("10.0.0.1", self.now), NodeClock("10.0.0.2", self.now)]


class MemoryCopy:
    """A bootstrap's copy: a ring of ``ranges`` token ranges, each copied at once."""

    def __init__(self, events: Events, state: MemorySinkState, ranges: int = 4) -> None:
        self.events = events
        self.state = state
        self.ranges = ranges

    def truncate_sink(self) -> None:
        self.events.append("truncate")

    def ring(self) -> list[TokenRange]:
        step = 2**64 // self.ranges
        lows = [-(2**63) + i * step for i in range(self.ranges)]
        highs = [*lows[1:], 2**63 - 1]
        return [TokenRange(low, high) for low, high in zip(lows, highs, strict=True)]

    def copy(self, ranges: Sequence[TokenRange], snapshot_at: datetime, run_id: str) -> int:
        for tokens in ranges:
            self.state.record_copied_range(snapshot_at, tokens, 10, run_id)
        self.events.append(f"copy {len(ranges)}")
        return 10 * len(ranges)


class MemorySpark:
    """The run's Spark jobs, in memory: a copy, no apply on executors."""

    def __init__(self, events: Events, states: MemorySinkStates) -> None:
        self.events = events
        self.states = states
        self.elsewhere: SliceApply | None = None

    def check_clusters(self) -> None:
        self.events.append("check_clusters")

    def copier(self, job: Replication, shape: SinkShape) -> MemoryCopy:
        return MemoryCopy(self.events, self.states.state(job.source, job.sink))

    def slice_apply(self, job: Replication, shape: SinkShape, run_id: str) -> SliceApply | None:
        return self.elsewhere


def at(seconds: float) -> datetime:
    """``seconds`` after the tests' epoch."""
    return T0 + timedelta(seconds=seconds)


def micros(seconds: float) -> int:
    return to_micros(at(seconds))


def when(change: ChangeId) -> datetime:
    return from_micros(change.write_time_us)


@dataclass
class Ports:
    """A run's ports in memory, and the fakes behind them."""

    events: Events
    lake: MemoryLake
    source: MemoryTables
    sink: MemoryTables
    writes: MemorySinkWrites
    states: MemorySinkStates
    checkpoints: MemoryCheckpoints
    spark: MemorySpark

    @classmethod
    def of(cls, source: Sequence[TableDefinition], sink: Sequence[TableDefinition],
           *, same_cluster: bool = False, edges: Sequence[datetime] = ()) -> Ports:  # fmt: skip
        events = Events()
        states = MemorySinkStates(events)
        sink_tables = MemoryTables(events, sink, "source" if same_cluster else "sink")
        if same_cluster:
            sink_tables.hosts = frozenset({"source-host"})
        return cls(
            events, MemoryLake(events, edges), MemoryTables(events, source, "source"),
            sink_tables, MemorySinkWrites(events), states, MemoryCheckpoints(),
            MemorySpark(events, states),
        )  # fmt: skip

    def ports(self, settings: ReplicationSettings | None = None) -> ReplicationPorts:
        return ReplicationPorts(
            self.source, self.sink, self.writes, self.states, self.lake, self.checkpoints,
            FixedClocks(T0 + timedelta(days=2)), self.spark,
            settings or ReplicationSettings(),
        )  # fmt: skip

    def state(self, source: TableRef = SOURCE, sink: TableRef = SINK) -> MemorySinkState:
        return self.states.state(source, sink)
