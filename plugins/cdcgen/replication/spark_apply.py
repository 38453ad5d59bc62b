"""A run's slices applied on Spark executors, partitioned by partition key.

One Python process turns changes into statements at a rate far below what the changes
extraction, a Spark job, writes into the lake; a table loaded near its cluster's capacity
would leave the sink ever further behind. So a run can spread each slice
(:mod:`cdcgen.replication.change_slices`) over Spark tasks, with
``CDCGEN_REPLICATION_APPLY_TASKS`` set:

1. the driver cuts the slice by partition key into that many buckets (each keeps the
   slice's time order, and all the changes of one partition key, so each CDC batch's
   part of a partition too), with the sink's own changes of the same keys
   (active-active), and ships them as Arrow IPC in one broadcast;
2. each task applies its bucket exactly as a run applies a slice in its own process
   (:meth:`cdcgen.replication.apply.SinkApplier.apply_slice`): per-key order, CDC
   batches whole, packed requests, rejects recorded on the sink; through the worker's
   shared sink session (:func:`cdcgen.adapters.read_sessions.shared_client`), whose
   access travels masked in the task closure;
3. once every task is done, the driver moves the sink's consistency point to the
   slice's end. A failed job moves nothing: the next run applies the slice again, which
   writes the same cells at the same times (:class:`~cdcgen.core.replication_plan.
   ApplyIncomplete`, transient).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.sink_state import CqlSinkState
from cdcgen.adapters.sink_writes import CqlSinkWrites
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.errors import ApplyIncomplete, ReplicationError
from cdcgen.core.replication_record import RejectedEntry
from cdcgen.ports import ChangeSlice
from cdcgen.replication.apply import ApplyOutcome, SinkApplier, SinkClock
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.replication.sink_schema import SinkShape
from cdcgen.spark_runtime.fanout import fan_out, job_failure, task_items
from cdcgen.spark_runtime.worker_heap import freeze_once

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Broadcast
    from pyspark.sql import SparkSession

    from cdcgen.adapters.read_sessions import SessionKey

log = logging.getLogger(__name__)

#: One line per task, what the job returns to the driver (operations and the first
#: rejects as JSON).
RESULT_SCHEMA = (
    "log_rows long, peer_rows long, batches long, requests long, operations string, "
    "rejected string, rejected_count long"
)


@dataclass(frozen=True)
class ApplyJob:
    """What every apply task needs, pickled once into the Spark closure."""

    sink_session: SessionKey
    shape: SinkShape
    source: TableRef
    sink: TableRef
    run_id: str
    settings: ReplicationSettings


def key_buckets(changes: pa.Table, key: Sequence[str], count: int) -> list[pa.Table]:
    """``changes`` cut into ``count`` tables by partition key, each in the order of
    ``changes`` (a key's rows all in one)."""
    import pyarrow as pa

    columns = [changes.column(name).to_pylist() for name in key]
    rows: list[list[int]] = [[] for _ in range(count)]
    for index, values in enumerate(zip(*columns, strict=True)):
        rows[hash(repr(values)) % count].append(index)
    return [changes.take(pa.array(indices, pa.int64())) for indices in rows]


def to_ipc(table: pa.Table) -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def from_ipc(data: bytes | None) -> pa.Table | None:
    import pyarrow as pa

    return None if data is None else pa.ipc.open_stream(data).read_all()


def apply_buckets(
    job: ApplyJob, tasks: Broadcast[list[list[Any]]], batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """A Spark task (``mapInArrow``): apply this task's buckets; one result row."""
    import pyarrow as pa

    from cdcgen.adapters.read_sessions import shared_client

    sink = shared_client(job.sink_session)
    writes = CqlSinkWrites(sink, job.settings.concurrency)
    state = CqlSinkState(sink, job.source, job.sink)
    applier = SinkApplier(writes, job.shape, state, job.run_id, job.settings)
    freeze_once()  # the worker's long-lived heap, out of the collector's walks
    clock = SinkClock(writes)
    outcome = ApplyOutcome()
    for changes, peer in task_items(tasks, batches):
        applier.apply_slice(from_ipc(changes), from_ipc(peer), outcome, clock)
    rejected = [entry.model_dump() for entry in applier.rejected]
    yield pa.RecordBatch.from_pydict(
        {
            "log_rows": [outcome.log_rows],
            "peer_rows": [outcome.peer_rows],
            "batches": [outcome.batches],
            "requests": [outcome.requests],
            "operations": [json.dumps(dict(outcome.operations))],
            "rejected": [json.dumps(rejected)],
            "rejected_count": [applier.rejected_count],
        }
    )


class SparkApply:
    """Applies each slice of a run on Spark (:class:`cdcgen.replication.apply.SliceApply`)."""

    def __init__(self, spark: SparkSession, job: ApplyJob, tasks: int) -> None:
        if tasks < 1:
            raise ValueError("a Spark apply needs at least one task")
        self.spark = spark
        self.job = job
        self.tasks = tasks

    def apply(self, part: ChangeSlice) -> ApplyOutcome:
        """Every change of ``part`` acknowledged by the sink, or :class:`ApplyIncomplete`
        (or the refusal that stopped it, terminal)."""
        key = self.job.shape.table.partition_key
        changes = key_buckets(part.changes, key, self.tasks)
        peers = key_buckets(part.peer, key, self.tasks) if part.peer is not None else None
        tasks: list[tuple[str, list[tuple[bytes, bytes | None]]]] = []
        for number, bucket in enumerate(changes):
            peer = None if peers is None or peers[number].num_rows == 0 else peers[number]
            if bucket.num_rows:
                tasks.append(("", [(to_ipc(bucket), None if peer is None else to_ipc(peer))]))
        outcome = ApplyOutcome()
        if not tasks:
            return outcome
        what = f"apply {self.job.source} to {self.job.sink} until {part.until.isoformat()}"
        log.info("%s: %d changes in %d Spark tasks", what, part.changes.num_rows, len(tasks))
        self.spark.sparkContext.setJobDescription(what)
        frame, broadcast = fan_out(
            self.spark, tasks, partial(apply_buckets, self.job), RESULT_SCHEMA
        )
        try:
            rows = frame.collect()
        except Exception as exc:
            raise task_failure(exc, what) from None
        finally:
            broadcast.unpersist()
        for row in rows:
            done = ApplyOutcome(
                log_rows=row["log_rows"],
                peer_rows=row["peer_rows"],
                batches=row["batches"],
                requests=row["requests"],
                operations=Counter(json.loads(row["operations"])),
                rejected=[RejectedEntry.model_validate(r) for r in json.loads(row["rejected"])],
                rejected_count=row["rejected_count"],
            )
            outcome.add(done)
        return outcome


def task_failure(exc: BaseException, what: str) -> Exception:
    """The error a failed apply job means: a refusal stays terminal, by its own words;
    anything else is :class:`ApplyIncomplete`."""
    return job_failure(
        exc,
        ReplicationError,
        lambda last: ApplyIncomplete(
            f"{what}: the Spark job stopped part-way ({last}); the consistency "
            "point stays before it, and the next run applies it again"
        ),
    )
