"""The lake's changes of one table as a replication run reads them (no JVM).

A run reads the lake version that holds everything up to the source table's watermark
(delta-rs resolves its files, pyarrow reads them), keeps the rows of its time range,
pruned by the ``date`` partitions first, and orders them as each stream logged them:
write time, ``cdc$time``, ``cdc$batch_seq_no``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from cdcgen.adapters.delta_tables import is_delta
from cdcgen.changes.layout import read_delta
from cdcgen.core.cdc_log import BATCH_SEQ_NO, STREAM_ID, TIME
from cdcgen.core.replication_plan import ApplyPlan

if TYPE_CHECKING:
    import pyarrow as pa

    from cdcgen.adapters.lake_store import LakeRoot

#: Lake columns that are not the log's (the lake's own partitions and derived columns).
LAKE_ONLY = ("operation_name", "base_token", "date", "generation", "window", "bucket")
#: Changes per chunk of streams a run applies, then checkpoints.
CHUNK_ROWS = 20_000


def changes_in_range(root: LakeRoot, plan: ApplyPlan) -> pa.Table:
    """The lake's changes with write time in the plan's range, in stream order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    stamp = pa.timestamp("us", tz="UTC")
    where = (
        (pc.field("write_time") >= pa.scalar(plan.since, stamp))
        & (pc.field("write_time") < pa.scalar(plan.until, stamp))
        & (pc.field("date") >= plan.since.date().isoformat())
        & (pc.field("date") <= plan.until.date().isoformat())
    )
    if not is_delta(root):
        return pa.table({STREAM_ID: pa.array([], pa.binary())})  # no change extracted yet
    table = read_delta(root, plan.lake_version, where=where)
    table = table.drop_columns([c for c in LAKE_ONLY if c in table.column_names])
    order = [(STREAM_ID, "ascending"), ("write_time", "ascending"), (TIME, "ascending")]
    return table.sort_by([*order, (BATCH_SEQ_NO, "ascending")])


def stream_chunks(table: pa.Table, rows: int = CHUNK_ROWS) -> Iterator[pa.Table]:
    """Slices of ``table`` of about ``rows`` rows that never split a stream."""
    import numpy as np

    if table.num_rows == 0:
        return
    ids = table.column(STREAM_ID).to_numpy(zero_copy_only=False)
    starts = [0, *(int(i) for i in np.flatnonzero(ids[1:] != ids[:-1]) + 1)]
    begin = 0
    for start in [*starts[1:], table.num_rows]:
        if start - begin >= rows or start == table.num_rows:
            yield table.slice(begin, start - begin)
            begin = start
