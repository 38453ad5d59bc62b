"""One CDC batch's log rows as the parts of the base mutation they log, by operation."""

from __future__ import annotations

from cdcgen.core.cdc_log import Operation
from cdcgen.core.change_batch import ChangeBatch
from cdcgen.core.operations.deletes import (
    RANGE_ENDS,
    RANGE_STARTS,
    partition_delete,
    range_delete,
    row_delete,
    unpaired,
)
from cdcgen.core.operations.errors import ReplayError
from cdcgen.core.operations.mutations import Mutation
from cdcgen.core.operations.row_writes import row_write
from cdcgen.core.operations.table import TableShape

#: Each operation by its logged code (``Operation(code)`` costs an enum lookup a row,
#: and raises on a code it does not know).
_OPERATIONS = {int(operation): operation for operation in Operation}
_IMAGES = (Operation.PRE_IMAGE, Operation.POST_IMAGE)
#: A client's deletes and ScyllaDB's own (an expiry), which delete alike.
_PARTITION_DELETES = (Operation.PARTITION_DELETE, Operation.SERVICE_PARTITION_DELETE)
_ROW_DELETES = (Operation.ROW_DELETE, Operation.SERVICE_ROW_DELETE)


def mutations(table: TableShape, batch: ChangeBatch, rows: range) -> list[Mutation]:
    """The mutations of one CDC batch (``rows`` of ``batch``, in ``cdc$batch_seq_no``
    order); :class:`ReplayError` names a change that cannot be replayed as logged."""
    errors = batch.errors
    if errors:
        for row in rows:
            if row in errors:
                raise ReplayError(errors[row])
    parts: list[Mutation] = []
    start: int | None = None
    for row in rows:
        code = batch.operation[row]
        operation = _OPERATIONS.get(code)
        if operation is None:
            raise ReplayError(
                f"{table.name}: cdc$operation {code} at {batch.write_time_us[row]} is not one "
                "of ScyllaDB's codes"
            )
        if operation in _IMAGES:
            continue
        if operation in RANGE_STARTS:
            start = row
            continue
        if operation in RANGE_ENDS:
            parts.append(range_delete(table, batch, start, row))
            start = None
            continue
        if start is not None:
            raise unpaired(table, batch.write_time_us[row])
        if operation in _PARTITION_DELETES:
            parts.append(partition_delete(table, batch, row))
        elif operation in _ROW_DELETES:
            parts.append(row_delete(table, batch, row))
        else:
            parts.append(row_write(table, batch, row, operation))
    if start is not None:
        raise unpaired(table, batch.write_time_us[start])
    return parts
