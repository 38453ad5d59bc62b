"""Row, partition and range deletes: log rows of operations 3, 4 and 5 to 8 (and -3 and
-4, the row and partition deletes ScyllaDB makes itself when a TTL runs out).

A row delete carries the row's primary key (the partition key alone when the log row
has no clustering key), a partition delete its partition key. A range delete is two log
rows of one CDC batch, its start bound (5 inclusive, 6 exclusive) then its end bound
(7, 8), in clustering order (``cdc/log.cc`` sets each row's clustering prefix from the
range tombstone's start and end); each carries the bound's clustering prefix, null
columns past it, no prefix at all an open bound.
"""

from __future__ import annotations

from cdcgen.core.cdc_log import Operation
from cdcgen.core.change_batch import ChangeBatch
from cdcgen.core.operations.errors import ReplayError
from cdcgen.core.operations.keys import is_static_row, key_of
from cdcgen.core.operations.mutations import Bound, PartitionDelete, RangeDelete, RowDelete
from cdcgen.core.operations.table import TableShape

RANGE_STARTS = (Operation.RANGE_DELETE_START_INCLUSIVE, Operation.RANGE_DELETE_START_EXCLUSIVE)
RANGE_ENDS = (Operation.RANGE_DELETE_END_INCLUSIVE, Operation.RANGE_DELETE_END_EXCLUSIVE)
_INCLUSIVE = (Operation.RANGE_DELETE_START_INCLUSIVE, Operation.RANGE_DELETE_END_INCLUSIVE)


def row_delete(table: TableShape, batch: ChangeBatch, row: int) -> RowDelete:
    static = is_static_row(table, batch, row)
    key = key_of(table, table.partition_key if static else table.primary_key, batch, row)
    return RowDelete(key, batch.write_time_us[row])


def partition_delete(table: TableShape, batch: ChangeBatch, row: int) -> PartitionDelete:
    return PartitionDelete(key_of(table, table.partition_key, batch, row), batch.write_time_us[row])


def range_delete(table: TableShape, batch: ChangeBatch, start: int | None, end: int
                 ) -> RangeDelete:  # fmt: skip
    """The range delete of bound rows ``start`` and ``end`` (its partition key is the end
    row's)."""
    written = batch.write_time_us[end]
    if start is None:
        raise ReplayError(
            f"{table.name}: a range delete's end bound without its start bound in the batch "
            f"at {written}"
        )
    key = key_of(table, table.partition_key, batch, end)
    return RangeDelete(key, _bound(table, batch, start), _bound(table, batch, end), written)


def unpaired(table: TableShape, written: int) -> ReplayError:
    return ReplayError(
        f"{table.name}: a range delete's start bound without its end bound in the batch "
        f"at {written}"
    )


def _bound(table: TableShape, batch: ChangeBatch, row: int) -> Bound:
    """A bound row's clustering prefix: its leading non-null clustering columns."""
    prefix = []
    for name in table.clustering_key:
        value = batch.value(name, row)
        if value is None:
            break
        prefix.append(value)
    return Bound(tuple(prefix), Operation(batch.operation[row]) in _INCLUSIVE)
