"""The small interfaces between the orchestration and the outside world.

The pipeline (:mod:`cdcgen.pipeline`, the changes run, the replication run) depends on
these protocols only;
:mod:`cdcgen.adapters` implements them over cassandra-driver (and Spark, for the lake),
and tests implement them in memory to check the orchestration's decisions fast. Each
port says what the orchestration needs, in the domain's words, and nothing more.

Three of replication's ports speak of replication's own types (a job, a sink's shape)
and so live beside them, below this module's callers but above it: the Spark jobs
(:class:`cdcgen.replication.replication_run.SparkJobs`), a slice's apply elsewhere
(:class:`cdcgen.replication.apply.SliceApply`) and a bootstrap's copy
(:class:`cdcgen.replication.bootstrap.TableCopy`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.change_batch import ChangeId
from cdcgen.core.clocks import NodeClock
from cdcgen.core.copy_progress import CopyProgress
from cdcgen.core.frozen import frozen_value
from cdcgen.core.generation import Generation
from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.lake_buckets import LakeBuckets
from cdcgen.core.log_ttls import LogTtls
from cdcgen.core.replication_plan import SinkProgress
from cdcgen.core.ring import Ring
from cdcgen.core.sink_statements import Statement
from cdcgen.core.table_definition import TableDefinition
from cdcgen.core.token_ranges import TokenRange
from cdcgen.core.topology import TopologyDescription
from cdcgen.core.watermark import BucketCheckpoint, TableProgress
from cdcgen.core.windows import GenerationSpan, LakeWindow, TableState, Window

if TYPE_CHECKING:
    import pyarrow as pa

#: ``(range_end, [stream blob, ...])``: one row of ``cdc_streams_descriptions_v2``.
StreamRows = Sequence[tuple[int, Sequence[bytes]]]


class GenerationSource(Protocol):
    """Committed generations of the source cluster.

    Two strategies: a vnodes cluster's generations (raft, gossip, V1), each cluster-wide,
    and a tablets cluster's per-table stream sets (each with ``Generation.table`` set).
    """

    def list_generations(self) -> list[Generation]:
        """Every committed generation whose description can be read, oldest first."""
        ...

    def read_description(self, generation: Generation) -> TopologyDescription:
        """The full description; raises ``IncompleteGeneration`` or ``CorruptGeneration``."""
        ...

    def read_arrays(self, generation: Generation) -> GenerationArrays:
        """The same description as arrays: millions of streams without one object each."""
        ...

    def spans(
        self, table: TableRef, since: datetime | None = None, until: datetime | None = None
    ) -> list[GenerationSpan]:
        """The generations ``table``'s changes were written in, overlapping ``[since, until)``."""
        ...


class DescriptionPublisher(Protocol):
    """The user-facing description tables: a generation's streams first, its timestamp last."""

    def published_among(self, generations: Sequence[Generation]) -> set[Generation]:
        """Those of ``generations`` consumers can already see."""
        ...

    def publish(self, generation: Generation, rows: StreamRows) -> int:
        """Publishes one validated generation idempotently; returns the stream rows written
        or confirmed."""
        ...


class GenerationLake(Protocol):
    """Extracted generations: what validation checked is exactly what publication reads."""

    def stream_rows(
        self, generation: Generation, version: int | None = None, digest: str | None = None
    ) -> StreamRows:
        """The generation's description as the rows to publish, as the lake's ``version``
        holds it (default: the latest); raises if it was never extracted, changed since,
        or is not the description of SHA-256 ``digest`` (the one validation checked)."""
        ...


class RingReader(Protocol):
    """The source cluster's token ring as it is now (raft: ``system.topology``; gossip:
    ``system.local`` and ``system.peers``)."""

    def read_ring(self) -> Ring | None:
        """The live ring; ``None`` when the cluster reports no token owner."""
        ...


class RingRecords(Protocol):
    """The ring each generation was made for, kept with the generations in the lake."""

    def recorded(self, generation: Generation) -> Ring | None:
        """The ring recorded with ``generation``, if a detection recorded one."""
        ...

    def record(self, generation: Generation, ring: Ring) -> bool:
        """Keeps ``ring`` as ``generation``'s unless one is recorded already; returns
        whether it was written."""
        ...


class ClockReader(Protocol):
    """Reads every node's current clock (``SELECT totimestamp(now()) FROM system.local``)."""

    def read_clocks(self) -> list[NodeClock]: ...


class CheckpointStore(Protocol):
    """Bucket checkpoints and each table's progress, which only ever move forward."""

    def table_state(self, table: TableRef) -> TableState: ...

    def progress(self, table: TableRef) -> TableProgress: ...

    def record_start(self, table: TableRef, started_at: datetime, run_id: str = "") -> None: ...

    def save(self, table: TableRef, checkpoints: Iterable[BucketCheckpoint]) -> int: ...

    def save_watermark(
        self,
        table: TableRef,
        watermark: datetime,
        run_id: str = "",
        lake_version: int | None = None,
        log_ttls: LogTtls | None = None,
    ) -> None: ...

    def prune(self, table: TableRef, generations: Sequence[GenerationSpan]) -> int: ...


class ChangeLogReader(Protocol):
    """Reads a CDC log table: windows of single streams, or time slices of token ranges."""

    @property
    def column_metadata(self) -> Sequence[Any]:
        """``(keyspace, table, name, cqltype)`` per selected column, in query order."""
        ...

    @property
    def protocol_version(self) -> int: ...

    def pages(self, stream: bytes, start: datetime, end: datetime) -> Iterator[list[Any]]:
        """The rows of ``stream`` with ``start <= cdc$time < end``, page by page, in
        clustering order (a key's changes in the order they were written)."""
        ...

    def count(self, stream: bytes, start: datetime, end: datetime) -> int:
        """``COUNT(*)`` of the same window, computed by the source."""
        ...

    def range_pages(
        self,
        low: int,
        high: int,
        start: datetime,
        end: datetime,
        replica: str | None = None,
        *,
        keys_only: bool = False,
    ) -> Iterator[list[Any]]:
        """The rows of every stream with ``low < token(stream) <= high`` and
        ``start <= cdc$time < end``, page by page, each partition's rows in clustering
        order; sent to ``replica`` (an address) when given and up; ``keys_only``:
        ``(cdc$stream_id, cdc$time)`` only."""
        ...

    def counters(self) -> Mapping[str, int]:
        """What this reader did so far (``queries``, ``retries``), reported per job."""
        ...


@dataclass(frozen=True)
class LakeCommit:
    """One commit of a table's changes: the table version that holds it, and what the
    write counted (``rows:<generation>``, ``queries``, ``retries``), and the version
    before it (None: the commit created the table)."""

    version: int
    counters: Counter[str]
    previous: int | None = None


class ChangesLake(Protocol):
    """Where a table's extracted changes live, window by window; every write is one
    commit, seen whole or not at all."""

    @property
    def location(self) -> str:
        """Where a person or a reader finds the table's dataset (a path or a URI)."""
        ...

    def buckets(self, wanted: int) -> LakeBuckets:
        """The table's buckets: the recorded count and rule, or ``wanted`` buckets by
        ring slice recorded now."""
        ...

    def windows(self) -> list[LakeWindow]:
        """Every (generation, window, bucket) the lake holds rows of."""
        ...

    def version(self) -> int | None:
        """The table's current version (None before its first commit)."""
        ...

    def remove(self, windows: Sequence[LakeWindow]) -> LakeCommit:
        """Deletes the rows of ``windows`` in one commit."""
        ...

    def write(self, windows: Sequence[Window], replacing: Sequence[LakeWindow] = ()) -> LakeCommit:
        """Reads ``windows`` and commits their rows in place of whatever the table held
        for them and for ``replacing`` (windows to drop in the same commit)."""
        ...

    def revert(self, commit: LakeCommit) -> LakeCommit:
        """Undoes ``commit`` in a new commit: the table holds what it held before it
        (nothing, if ``commit`` created it), while ``commit``'s version stays readable
        by time travel. Refuses when another commit followed ``commit``."""
        ...


# --- replication ------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterIdentity:
    """A cluster as the driver knows it: its name and its hosts' ids."""

    name: str
    hosts: frozenset[str]


class TableSchemas(Protocol):
    """One cluster's tables as replication reads (and, on the sink, alters) them."""

    def identity(self) -> ClusterIdentity: ...

    def definition(self, table: TableRef) -> TableDefinition | None:
        """The table's current definition (None: no such table)."""
        ...

    def add_column(self, table: TableRef, column: str, cql_type: str, static: bool) -> None:
        """``ALTER TABLE ... ADD`` (a column added meanwhile by another run is as wanted)."""
        ...

    def is_empty(self, table: TableRef, key_column: str) -> bool:
        """Whether the table holds no row."""
        ...


@frozen_value
class SinkBatch:
    """One CDC batch's statements, bound for the sink (``bound``: the driver's, opaque
    here), the replica its partition lives on ("" when unknown) and about how many bytes
    its values take."""

    bound: Sequence[object]
    replica: str = ""
    size: int = 0


@dataclass(frozen=True)
class Refusal:
    """A request the sink refused for its content (a value, or the request's size)."""

    request: int
    reason: str


class SinkWrites(Protocol):
    """The sink cluster's writes: its clock, where a partition lives, and requests of
    CDC batches sent until acknowledged."""

    def clock_us(self) -> int:
        """The sink's time in microseconds, read now (the latest of its nodes' clocks)."""
        ...

    def bind(self, keyspace: str, statements: Sequence[Statement]) -> SinkBatch:
        """One CDC batch's statements bound, with the replica of its partition."""
        ...

    def execute(self, requests: Sequence[Sequence[SinkBatch]]) -> list[Refusal]:
        """Every request (one unlogged batch of its CDC batches, each single-partition)
        sent, many at a time, and acknowledged, transient failures retried; returns
        those the sink refused. Other failures raise."""
        ...


class SinkState(Protocol):
    """A sink table's replication state, kept on the sink: its consistency point, the
    changes it refused, a bootstrap's copy in progress."""

    source: TableRef
    sink: TableRef

    def ensure_schema(self) -> None: ...

    def exists(self) -> bool:
        """Whether the state tables exist (a dry run creates none)."""
        ...

    def progress(self) -> SinkProgress: ...

    def save_progress(
        self,
        consistent_until: datetime,
        run_id: str,
        lake_version: int | None = None,
        bootstrapped_at: datetime | None = None,
    ) -> None:
        """Move the consistency point forward (an older one is ignored)."""
        ...

    def reject(self, change: ChangeId, reason: str, run_id: str) -> None:
        """Record a change not applied, before the consistency point passes it."""
        ...

    def start_copy(self, snapshot_at: datetime, truncate: bool, run_id: str) -> None: ...

    def copy_progress(self) -> CopyProgress | None: ...

    def record_copied_range(
        self, snapshot_at: datetime, tokens: TokenRange, rows: int, run_id: str
    ) -> None: ...

    def end_copy(self, snapshot_at: datetime) -> None: ...


class SinkStates(Protocol):
    """Where each replicated table's state is."""

    def state(self, source: TableRef, sink: TableRef) -> SinkState: ...


@dataclass(frozen=True)
class ChangeSlice:
    """The changes with write time in ``[since, until)``, in time order (each CDC
    batch's rows together); ``peer``: the sink table's own changes in the same range
    (active-active)."""

    since: datetime
    until: datetime
    changes: pa.Table
    peer: pa.Table | None = None


class LakeChanges(Protocol):
    """The changes lake as replication reads it."""

    def column_types(self, table: TableRef) -> dict[str, pa.DataType]:
        """The lake's column types of ``table``'s changes (none before its first write)."""
        ...

    def slices(
        self,
        table: TableRef,
        version: int | None,
        since: datetime,
        until: datetime,
        peer: TableRef | None = None,
    ) -> Generator[ChangeSlice, None, None]:
        """``table``'s changes of ``[since, until)`` at lake ``version``, in consecutive
        slices of bounded size, with ``peer``'s changes of each slice's range; closing
        the generator removes whatever it spilled."""
        ...
