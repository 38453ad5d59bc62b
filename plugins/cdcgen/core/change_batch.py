"""The lake's change rows of one table as the replay reads them: its columns, and one
typed value per batch of rows, columnar.

The changes lake keeps every column of the log under its own name (``cdc$stream_id``,
``cdc$time``, ... and the base table's columns, :mod:`cdcgen.core.cdc_log`) and adds
columns of its own, named here once:

* ``write_time``, the write timestamp inside ``cdc$time`` (microseconds, UTC): it orders
  a key's changes and cuts a backlog into time slices;
* ``operation_name`` (``cdc$operation`` decoded) and ``base_token`` (Murmur3 of the base
  partition key, what the colocation check maps), derived for readers and checks;
* the partition columns ``date`` (UTC day of ``write_time``), ``generation``, ``window``
  and ``bucket`` (:mod:`cdcgen.changes.layout`).

A :class:`ChangeBatch` is built once from an Arrow batch of those rows
(:func:`cdcgen.changes.codec.change_batch`), each column converted as a whole, and read
by the CQL rules (:mod:`cdcgen.core.operations`) the way scylla-cdc-rust's ``CDCRow``
is: a row's operation, TTL, write time, each column's value, its
``cdc$deleted_<col>`` flag and its ``cdc$deleted_elements_<col>`` elements, by index. No
row becomes a dictionary: a backlog of millions of rows is read column by column.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdcgen.core.frozen import frozen_value

#: The write timestamp inside ``cdc$time``, a UTC timestamp in microseconds.
WRITE_TIME = "write_time"
#: ``cdc$operation`` decoded (:func:`cdcgen.core.cdc_log.operation_name`).
OPERATION_NAME = "operation_name"
#: Murmur3 of the base partition key.
BASE_TOKEN = "base_token"
#: What the lake derives from each log row, after the log's own columns.
DERIVED_COLUMNS = (WRITE_TIME, OPERATION_NAME, BASE_TOKEN)

DATE = "date"
GENERATION = "generation"
WINDOW = "window"
BUCKET = "bucket"
#: The lake's partition columns, in the order a table is partitioned by.
PARTITION_COLUMNS = (DATE, GENERATION, WINDOW, BUCKET)
#: The partition columns that name one window of a generation in one lake bucket.
WINDOW_COLUMNS = (GENERATION, WINDOW, BUCKET)

#: Lake columns that are not the log's and that a replay never reads (the write time
#: is the log's too: it is inside ``cdc$time``).
NOT_REPLAYED = (OPERATION_NAME, BASE_TOKEN, *PARTITION_COLUMNS)


@frozen_value
class ChangeId:
    """What names one log row wherever it is reported: its stream, ``cdc$time`` (as the
    lake's text), ``cdc$batch_seq_no`` and write time."""

    stream_id: bytes
    cdc_time: str
    batch_seq_no: int
    write_time_us: int


class _Nulls(Sequence[Any]):
    """The values of a column a batch does not hold: null in every row."""

    __slots__ = ("_size",)

    def __init__(self, size: int) -> None:
        self._size = size

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: Any) -> Any:
        return None


@dataclass(frozen=True, eq=False)
class ChangeBatch:
    """Log rows of one table, a column each, in the order the lake's reader gave them
    (a slice's time order: each CDC batch's rows together, ``cdc$batch_seq_no`` up).

    ``cells`` holds the base columns' values (keys included), ``deleted`` the
    ``cdc$deleted_<col>`` flags and ``deleted_elements`` the
    ``cdc$deleted_elements_<col>`` values, each by base column name, converted as the
    batch's builder was told (the sink's: as the driver binds them). ``errors``: the
    first value of a row that could not be converted, by row, as the rules report it.
    """

    stream_id: Sequence[bytes]
    cdc_time: Sequence[str]
    batch_seq_no: Sequence[int]
    operation: Sequence[int]
    ttl: Sequence[int | None]
    write_time_us: Sequence[int]
    cells: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    deleted: Mapping[str, Sequence[bool | None]] = field(default_factory=dict)
    deleted_elements: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    errors: Mapping[int, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.operation)

    def column(self, name: str) -> Sequence[Any]:
        """A base column's values (null in every row when the batch has no such column)."""
        values = self.cells.get(name)
        return _Nulls(len(self)) if values is None else values

    def value(self, name: str, row: int) -> Any:
        values = self.cells.get(name)
        return None if values is None else values[row]

    def is_deleted(self, name: str, row: int) -> bool:
        """``cdc$deleted_<name>``: the write set the column to null, or overwrote a
        non-frozen collection or user type whole."""
        flags = self.deleted.get(name)
        return bool(flags is not None and flags[row])

    def deleted_elements_of(self, name: str, row: int) -> Any:
        """``cdc$deleted_elements_<name>``: the set elements or map keys removed, or the
        indices of the user type's fields set to null (None: none)."""
        values = self.deleted_elements.get(name)
        return None if values is None else values[row]

    def touches(self, name: str, row: int) -> bool:
        """Whether the row changes column ``name`` at all."""
        return (
            self.value(name, row) is not None
            or self.is_deleted(name, row)
            or bool(self.deleted_elements_of(name, row))
        )

    def change_id(self, row: int) -> ChangeId:
        return ChangeId(
            self.stream_id[row], self.cdc_time[row], self.batch_seq_no[row],
            self.write_time_us[row],
        )  # fmt: skip

    def key(self, names: Sequence[str], row: int) -> tuple[Any, ...]:
        """The values of columns ``names`` (a key) in one row."""
        cells = self.cells
        return tuple([None if (v := cells.get(n)) is None else v[row] for n in names])

    def cdc_batches(self) -> Iterator[range]:
        """The rows of each CDC batch, in order: consecutive rows of one stream, write
        time and ``cdc$time`` (ScyllaDB gives every log row of one base mutation the
        same ``cdc$time``)."""
        begin = 0
        size = len(self)
        keys = list(zip(self.stream_id, self.write_time_us, self.cdc_time, strict=True))
        for row in range(1, size):
            if keys[row] != keys[row - 1]:
                yield range(begin, row)
                begin = row
        if size:
            yield range(begin, size)
