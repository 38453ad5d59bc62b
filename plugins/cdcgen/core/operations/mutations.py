"""The parts of a base mutation, as its CDC batch logs them: typed, so that the sink's
statements and a mirror's state are two readings of one value.

A row write lists its column changes in the table's column order; each change is one
of the column's cells or sets of cells (a collection's elements, a user type's fields).
Values are as the batch's builder converted them (the sink's: as the driver binds them).
"""

from __future__ import annotations

from typing import Any

from cdcgen.core.frozen import frozen_value


@frozen_value
class SetValue:
    """An atomic column's cell written (``value`` None: deleted)."""

    column: str
    value: Any


@frozen_value
class Overwrite:
    """A non-frozen collection or user type replaced whole (``value`` None: emptied):
    ScyllaDB writes its tombstone at the write time - 1, then ``value``'s cells."""

    column: str
    value: Any


@frozen_value
class AddElements:
    """A non-frozen set's elements or map's entries added."""

    column: str
    elements: Any


@frozen_value
class SetFields:
    """A non-frozen user type's fields set, ``(field, value)`` in the type's order."""

    column: str
    fields: tuple[tuple[str, Any], ...]


@frozen_value
class RemoveElements:
    """A non-frozen set's elements or map's keys removed (their cells' tombstones)."""

    column: str
    keys: set[Any]


@frozen_value
class NullFields:
    """A non-frozen user type's fields set to null, in the type's order."""

    column: str
    fields: tuple[str, ...]


CellChange = SetValue | Overwrite | AddElements | SetFields | RemoveElements | NullFields
#: The changes that remove cells: CQL takes them in a statement of their own, since it
#: refuses two assignments of one column in one statement.
REMOVALS = (RemoveElements, NullFields)
#: The changes that write a column's value whole: all an insert holds.
WHOLE_VALUES = (SetValue, Overwrite)


@frozen_value
class RowWrite:
    """An insert or update of one row: ``key`` is its primary key's values, the
    partition key's alone for a static row; ``marker``: an insert's row marker (the row
    exists while it lives, whatever its cells); ``ttl``: the write's TTL in seconds as
    logged (None: none)."""

    key: tuple[Any, ...]
    static: bool
    marker: bool
    write_time_us: int
    ttl: int | None
    cells: tuple[CellChange, ...]


@frozen_value
class RowDelete:
    """A row's tombstone (``key``: as the log gives it, the partition key's values alone
    when it carries no clustering key)."""

    key: tuple[Any, ...]
    write_time_us: int


@frozen_value
class PartitionDelete:
    """A partition's tombstone."""

    key: tuple[Any, ...]
    write_time_us: int


@frozen_value
class Bound:
    """One end of a clustering range: the values of the leading clustering columns it
    fixes (none: open), and whether rows equal to it are in the range."""

    prefix: tuple[Any, ...]
    inclusive: bool


@frozen_value
class RangeDelete:
    """A range tombstone over the rows of a partition from ``start`` to ``end``, in
    clustering order (on a column sorted descending, the start holds the larger value)."""

    key: tuple[Any, ...]
    start: Bound
    end: Bound
    write_time_us: int


Mutation = RowWrite | RowDelete | PartitionDelete | RangeDelete
