"""A bootstrap's copy as a Spark job: token ranges of the source, fanned out over tasks.

The copy of a table of hundreds of gigabytes needs the distributed engine, as ScyllaDB's
own migrator uses Spark: the ring is cut into token ranges (at least
``CDCGEN_REPLICATION_COPY_SPLITS``, each within one primary replica's share), grouped
into Spark tasks by that replica (:func:`cdcgen.spark_runtime.fanout.plan_tasks`), and each task
scans its ranges with cassandra-driver and writes every row into the sink, in the one
way :class:`~cdcgen.core.snapshot_copy.CopyLayout` says a row is copied (each atomic
cell with its write time and remaining TTL; one single-partition unlogged batch per row).

Each task records every range it finished on the sink
(:meth:`~cdcgen.adapters.sink_state.CqlSinkState.record_copied_range`) once every
row of it is acknowledged, so a copy killed at any point leaves exactly the finished
ranges recorded, and the next bootstrap copies only the others
(:mod:`cdcgen.core.copy_progress`). A range cut short is copied again whole, which
writes the same cells at the same times: idempotent.

The tasks open their sessions from :class:`~cdcgen.adapters.read_sessions.SessionKey`
values that travel in the task closure with the credentials and TLS material inside
(masked), one session per Python worker and cluster; executors read no environment.
Each page of a scan is requested before the previous one is written, so the source
reads the next page while the sink takes the current one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.cluster_access import access_for
from cdcgen.adapters.read_retries import Backoff, ReadStats, with_retries
from cdcgen.adapters.read_sessions import SessionKey, shared_client
from cdcgen.adapters.sink_state import CqlSinkState
from cdcgen.adapters.sink_writes import execute_all
from cdcgen.adapters.stream_routing import ANY_REPLICA, host_name, replicas_for_token
from cdcgen.core.cdc_log import LogPartitioner, TableRef
from cdcgen.core.errors import CopyIncomplete, ReplicationError
from cdcgen.core.operations.table import TableShape
from cdcgen.core.snapshot_copy import CopyLayout
from cdcgen.core.time import to_micros
from cdcgen.core.token_ranges import TokenRange, ring_ranges
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.spark_runtime.fanout import (
    fan_out,
    job_failure,
    min_tasks,
    plan_tasks,
    task_items,
)
from cdcgen.spark_runtime.worker_heap import freeze_once

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Broadcast
    from pyspark.sql import SparkSession

    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig

log = logging.getLogger(__name__)

#: Spark tasks per task slot: small tasks balance better across slots, and each still
#: takes several ranges of a ring cut into the default count.
TASKS_PER_SLOT = 4

#: One line per finished range, what the job returns to the driver.
RESULT_SCHEMA = "range_low long, range_high long, rows long"


@dataclass(frozen=True)
class RangeCopy:
    """One unit of the copy: tokens ``(low, high]``, sent to their primary replica."""

    low: int
    high: int
    replica: str


@dataclass(frozen=True)
class CopyTarget:
    """What a copy reads and writes, and how: both clusters' sessions (their access is
    masked in any ``repr``), the tables, paging and writes in flight."""

    source_session: SessionKey
    sink_session: SessionKey
    source: TableRef
    sink: TableRef
    table: TableShape
    page_rows: int
    concurrency: int
    backoff: Backoff = field(default_factory=Backoff)


@dataclass(frozen=True)
class CopyJob:
    """What every copy task needs, pickled once into the Spark closure."""

    target: CopyTarget
    snapshot_at: datetime
    run_id: str


def copy_target(
    source_config: PipelineConfig,
    sink_config: PipelineConfig,
    source: TableRef,
    sink: TableRef,
    table: TableShape,
    settings: ReplicationSettings,
) -> CopyTarget:
    """The copy of ``source`` into ``sink`` (of the replay model's ``table``)."""
    return CopyTarget(
        session_key(source_config, settings),
        session_key(sink_config, settings),
        source,
        sink,
        table,
        settings.copy_page_rows,
        settings.copy_concurrency,
    )


def session_key(config: PipelineConfig, settings: ReplicationSettings) -> SessionKey:
    """How a copy task reaches the cluster ``config`` describes: its nodes and access, and
    token-aware routing (base tables are Murmur3-partitioned on both databases)."""
    return SessionKey(
        tuple(config.contact_points),
        config.port,
        LogPartitioner.MURMUR3,
        settings.request_timeout.total_seconds(),
        config.protocol_version,
        access_for(config),
    )


class RangeWriter:
    """Copies token ranges of the source into the sink, on a worker's shared sessions."""

    def __init__(self, job: CopyJob, source: CqlClient, sink: CqlClient) -> None:
        self.target = job.target
        self.source = source
        self.sink = sink
        self.layout = CopyLayout(job.target.table)
        self.snapshot_us = to_micros(job.snapshot_at)
        self.select = source.prepared(self.layout.select_cql(job.target.source))
        self.select.fetch_size = job.target.page_rows
        # The source table is the user's, written at whatever level: read it at QUORUM,
        # as before a local datacenter was set; the sink's rows are the pipeline's own.
        self.select.consistency_level = source.metadata_consistency
        self.consistency = sink.state_consistency  # read once: it lists the hosts
        self.stats = ReadStats()

    def copy(self, item: RangeCopy) -> int:
        """Every row of ``item`` written and acknowledged by the sink; how many."""
        copied = 0
        for page in self._pages(item):
            work = [self._row_batch(row) for row in page]
            refused = execute_all(self.sink, work, self.target.concurrency)
            if refused:
                reason = refused[0][1]
                raise ReplicationError(f"{self.target.sink}: a copied row was refused: {reason}")
            copied += len(work)
        return copied

    def _pages(self, item: RangeCopy) -> Iterator[Sequence[Any]]:
        """The range's rows page by page, each next page requested before this one is
        handed out; a failed page is requested again alone, from its paging state."""
        bound = self.select.bind((item.low, item.high))
        host = self._host(item.replica)
        what = f"{self.target.source} tokens ({item.low}, {item.high}]"
        state: bytes | None = None
        pending = self._request(bound, state, host)
        while True:
            result = with_retries(
                self._answer(pending, bound, state, host), what, self.target.backoff, self.stats
            )
            state = result.paging_state
            pending = self._request(bound, state, host) if state else None
            yield result.current_rows
            if pending is None:
                return

    def _request(self, bound: Any, state: bytes | None, host: Any) -> Any:
        extra = {} if host is None else {"host": host}
        return self.source.session.execute_async(bound, paging_state=state, **extra)

    def _answer(self, pending: Any, bound: Any, state: bytes | None, host: Any
                ) -> Callable[[], Any]:  # fmt: skip
        """The pending page's result on the first attempt, a new request on the next."""
        attempts = [pending]

        def answer() -> Any:
            future = attempts.pop() if attempts else self._request(bound, state, host)
            return future.result()

        return answer

    def _host(self, address: str) -> Any:
        for host in self.source.cluster.metadata.all_hosts():
            if host_name(host) == address and host.is_up:
                return host
        return None

    def _row_batch(self, row: Sequence[Any]) -> Any:
        from cassandra.query import BatchStatement, BatchType

        batch = BatchStatement(batch_type=BatchType.UNLOGGED, consistency_level=self.consistency)
        batch.is_idempotent = True
        for statement in self.layout.statements(row, self.snapshot_us):
            batch.add(self.sink.prepared(statement.cql), statement.values)
        return batch


def copy_ranges(
    job: CopyJob, tasks: Broadcast[list[list[Any]]], batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """A Spark task (``mapInArrow``): copy this task's ranges, recording each on the sink
    once its rows are acknowledged; one result row per range."""
    import pyarrow as pa

    target = job.target
    sink = shared_client(target.sink_session)
    writer = RangeWriter(job, shared_client(target.source_session), sink)
    state = CqlSinkState(sink, target.source, target.sink)
    freeze_once()  # the worker's long-lived heap, out of the collector's walks
    done: list[tuple[int, int, int]] = []
    item: RangeCopy
    for item in task_items(tasks, batches):
        rows = writer.copy(item)
        tokens = TokenRange(item.low, item.high)
        state.record_copied_range(job.snapshot_at, tokens, rows, job.run_id)
        done.append((item.low, item.high, rows))
    lows, highs, counts = zip(*done, strict=True) if done else ((), (), ())
    yield pa.RecordBatch.from_arrays(
        [pa.array(lows, pa.int64()), pa.array(highs, pa.int64()), pa.array(counts, pa.int64())],
        names=["range_low", "range_high", "rows"],
    )


class SparkTableCopy:
    """The bootstrap's copier (:class:`cdcgen.replication.bootstrap.TableCopy`) as a
    Spark job; the driver's clients plan the ranges and truncate, the tasks copy."""

    def __init__(
        self,
        spark: SparkSession,
        source_client: CqlClient,
        sink_client: CqlClient,
        target: CopyTarget,
        splits: int,
    ) -> None:
        self.spark = spark
        self.source_client = source_client
        self.sink_client = sink_client
        self.target = target
        self.splits = splits

    def truncate_sink(self) -> None:
        self.sink_client.session.execute(f"TRUNCATE {self.target.table.qualified}", timeout=120)

    def ring(self) -> list[TokenRange]:
        """The source ring cut into at least ``splits`` ranges, in ring order."""
        token_map = self.source_client.cluster.metadata.token_map
        tokens = [int(t.value) for t in token_map.ring] if token_map is not None else []
        return ring_ranges(tokens, at_least=self.splits)

    def copy(self, ranges: Sequence[TokenRange], snapshot_at: datetime, run_id: str) -> int:
        """Copy ``ranges`` at ``snapshot_at`` in one Spark job; rows copied. A failed job
        raises :class:`CopyIncomplete` (or the refusal that stopped it, terminal)."""
        if not ranges:
            return 0
        job = CopyJob(self.target, snapshot_at, run_id)
        items = [RangeCopy(r.low, r.high, self._replica(r.high)) for r in ranges]
        count = min(len(items), min_tasks(self.spark) * TASKS_PER_SLOT)
        tasks = plan_tasks(items, lambda item: item.replica, len(items), count)
        source, sink = self.target.source, self.target.sink
        log.info("copy %s: %d token ranges in %d Spark tasks", source, len(items), len(tasks))
        self.spark.sparkContext.setJobDescription(f"copy {source} into {sink}")
        frame, broadcast = fan_out(self.spark, tasks, partial(copy_ranges, job), RESULT_SCHEMA)
        try:
            done = frame.collect()
        except Exception as exc:
            raise task_failure(exc, self.target) from None
        finally:
            broadcast.unpersist()
        return sum(int(row["rows"]) for row in done)

    def _replica(self, token: int) -> str:
        metadata = self.source_client.cluster.metadata
        replicas = replicas_for_token(metadata, self.target.source.keyspace, token)
        return host_name(replicas[0]) if replicas else ANY_REPLICA


def task_failure(exc: BaseException, target: CopyTarget) -> Exception:
    """The error a failed copy job means: a refusal stays terminal, by its own words;
    anything else is :class:`CopyIncomplete` (a later bootstrap resumes)."""
    return job_failure(
        exc,
        ReplicationError,
        lambda last: CopyIncomplete(
            f"the copy of {target.source} into {target.sink} stopped part-way ({last}); "
            "the ranges it finished are recorded on the sink, and the next bootstrap resumes "
            "with the others at the same snapshot time"
        ),
    )
