"""Fan per-stream work out over Spark tasks: one task per group of streams sharing a
primary replica, each task one Spark partition.

Used by every Spark job that talks to the source stream by stream (the extraction of
changes and the source row counts of the row checks), so both spread their queries
the same way:

1. :func:`plan_tasks` groups work items by their stream's primary replica (each task
   then talks to one node), cuts each group into tasks of bounded size, at least
   :func:`min_tasks` overall, and orders the tasks round-robin over replicas, so the
   first tasks Spark runs in parallel hit different nodes rather than queueing on one;
2. :func:`fan_out` broadcasts the task list once and builds ``spark.range(n, n)``: one
   id per partition, no shuffle, no Python stage; each task looks its items up by id
   (:func:`task_items`) inside ``mapInArrow`` and yields Arrow batches.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Accumulator, Broadcast
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

T = TypeVar("T")

#: ``(primary replica, items)``: the work of one Spark task.
Task = tuple[str, list[T]]

#: What runs in a Spark task: the broadcast task list and the task's id batches in,
#: Arrow batches out (``mapInArrow``'s contract with the broadcast bound first).
TaskFunction = Callable[
    ["Broadcast[list[list[Any]]]", Iterable["pa.RecordBatch"]], Iterator["pa.RecordBatch"]
]


def plan_tasks(
    items: Sequence[T], replica_of: Callable[[T], str], max_per_task: int, min_tasks: int = 1
) -> list[Task[T]]:
    """Split work into tasks that each touch one primary replica.

    A replica's items are cut into equal chunks of at most ``max_per_task``, smaller
    when needed to make at least ``min_tasks`` tasks overall (so a one-node cluster
    still keeps every Spark core busy); tasks are then ordered round-robin over replicas.
    """
    if max_per_task < 1 or min_tasks < 1:
        raise ValueError("max_per_task and min_tasks must be at least 1")
    per_task = min(max_per_task, max(1, math.ceil(len(items) / min_tasks)))
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(replica_of(item), []).append(item)
    chunked: list[list[Task[T]]] = []
    for replica in sorted(groups):
        members = groups[replica]
        count = math.ceil(len(members) / per_task)
        size = math.ceil(len(members) / count)
        chunked.append([(replica, members[i : i + size]) for i in range(0, len(members), size)])
    tasks: list[Task[T]] = []
    for round_ in range(max((len(c) for c in chunked), default=0)):
        for chunks in chunked:
            if round_ < len(chunks):
                tasks.append(chunks[round_])
    return tasks


def min_tasks(spark: SparkSession, configured: int = 0) -> int:
    """``configured``, or two tasks per Spark core: reads are I/O-bound."""
    return configured or 2 * int(spark.sparkContext.defaultParallelism)


def task_items(
    tasks: Broadcast[list[list[Any]]], batches: Iterable[pa.RecordBatch]
) -> Iterator[Any]:
    """The work items of this Spark task: its ``id`` indexes the broadcast task list."""
    for batch in batches:
        for task_id in batch.column("id").to_pylist():
            yield from tasks.value[task_id]


def fan_out(
    spark: SparkSession,
    tasks: Sequence[Task[Any]],
    task: TaskFunction,
    schema: StructType | str,
) -> tuple[DataFrame, Broadcast[list[list[Any]]]]:
    """One Spark partition per task, in task order, mapped by ``task`` to ``schema`` rows.

    Returns the frame and the broadcast task list; unpersist the broadcast once the
    frame's last action ran.
    """
    work = [list(items) for _, items in tasks]
    broadcast = spark.sparkContext.broadcast(work)
    ids = spark.range(0, len(work), 1, max(1, len(work)))
    return ids.mapInArrow(partial(task, broadcast), schema), broadcast


def arrow_struct(schema: pa.Schema) -> StructType:
    """The Spark schema of an Arrow schema (so Spark never infers, and fails loudly)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def counter_accumulator(spark: SparkSession) -> Accumulator[Counter[str]]:
    """A ``Counter`` tasks add to (rows per generation, queries, retries), read on the driver."""
    from pyspark.accumulators import AccumulatorParam

    class CounterParam(AccumulatorParam[Counter[str]]):
        def zero(self, value: Counter[str]) -> Counter[str]:
            return Counter()

        def addInPlace(self, a: Counter[str], b: Counter[str]) -> Counter[str]:
            a.update(b)
            return a

    return spark.sparkContext.accumulator(Counter(), CounterParam())


def raised_in_task(exc: BaseException, kind: type[Exception]) -> str | None:
    """The message of a ``kind`` a task raised, from the failed job's error (the driver
    sees a task's exception only as text), or None."""
    text = str(exc)
    marker = f"{kind.__name__}: "
    return text.split(marker, 1)[1].splitlines()[0] if marker in text else None


def last_line(exc: BaseException, limit: int = 500) -> str:
    """The last line of a failed job's error: what stopped the task, in short."""
    text = str(exc)
    last = next((line for line in reversed(text.splitlines()) if line.strip()), text)
    return last.strip()[:limit]


def job_failure(
    exc: BaseException, terminal: type[Exception], transient: Callable[[str], Exception]
) -> Exception:
    """The error a failed job means: a ``terminal`` one a task raised, in its own words;
    anything else ``transient`` of the job's last line."""
    reason = raised_in_task(exc, terminal)
    return terminal(reason) if reason is not None else transient(last_line(exc))
