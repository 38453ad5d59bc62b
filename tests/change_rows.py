"""Log rows written by hand, as the CQL rules read them: a ChangeBatch from a few rows
given as mappings of column name to value (the driver's), so the unit tests of the rules
and of the apply need no lake."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import count

from cdcgen.changes.codec import batch_of_columns
from cdcgen.core.cdc_log import BATCH_SEQ_NO, OPERATION, STREAM_ID, TIME, TTL
from cdcgen.core.change_batch import WRITE_TIME, ChangeBatch
from cdcgen.core.operations.decode import mutations
from cdcgen.core.operations.table import TableShape
from cdcgen.core.sink_statements import Statement, statements

_TIMES = count(1)


def change_batch(rows: Sequence[Mapping[str, object]], write_time_us: int) -> ChangeBatch:
    """One CDC batch of ``rows`` (numbered in order, one ``cdc$time``) at ``write_time_us``;
    a row's own stream, time, number or write time, when given, are kept."""
    time = f"t-{next(_TIMES)}"
    filled = [
        {STREAM_ID: b"\x01" * 16, TIME: time, BATCH_SEQ_NO: n, TTL: None,
         WRITE_TIME: write_time_us, **row}
        for n, row in enumerate(rows)
    ]  # fmt: skip
    names = dict.fromkeys(name for row in filled for name in row)
    columns = {name: [row.get(name) for row in filled] for name in names}
    columns.setdefault(OPERATION, [None] * len(filled))
    return batch_of_columns(columns, {}, len(filled))


def batch_statements(
    table: TableShape, rows: Sequence[Mapping[str, object]], write_time_us: int, *, now_us: int
) -> list[Statement]:
    """The statements that replay one CDC batch of ``rows`` on a sink at ``now_us``."""
    batch = change_batch(rows, write_time_us)
    return statements(table, mutations(table, batch, range(len(batch))), now_us=now_us)
