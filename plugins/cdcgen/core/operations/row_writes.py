"""Inserts and updates: a log row of operation 2 or 1 as the row write it logs.

* An **insert** of a clustering row writes its row marker and every cell it names, a
  non-frozen collection or user type whole (an insert overwrites it).
* An **update** writes only the cells it names: an atomic column's value (null when
  ``cdc$deleted_<col>`` says it was deleted); a non-frozen collection or user type
  overwritten whole (``cdc$deleted_<col>``), else its elements added or its fields set
  (the value's non-null fields), and ``cdc$deleted_elements_<col>``'s elements removed
  or fields (by index) set to null.
* A **static row**'s change is a log row of its own with no clustering key, addressed
  by partition key, and never has a row marker (an insert of it is an update of the
  partition's static cells); each row sets only its own kind of columns.
"""

from __future__ import annotations

from collections.abc import Iterable

from cdcgen.core.cdc_log import Operation
from cdcgen.core.change_batch import ChangeBatch
from cdcgen.core.operations.errors import ReplayError
from cdcgen.core.operations.keys import is_static_row, key_of
from cdcgen.core.operations.mutations import (
    AddElements,
    CellChange,
    NullFields,
    Overwrite,
    RemoveElements,
    RowWrite,
    SetFields,
    SetValue,
)
from cdcgen.core.operations.table import ColumnKind, TableShape


def row_write(table: TableShape, batch: ChangeBatch, row: int, operation: Operation) -> RowWrite:
    """The insert or update of log row ``row``."""
    static = is_static_row(table, batch, row)
    key = key_of(table, table.partition_key if static else table.primary_key, batch, row)
    columns = _columns_of(table, batch, row, static)
    ttl = batch.ttl[row]
    inserted = operation is Operation.INSERT and not static
    cells = _inserted(batch, row, columns) if inserted else _updated(table, batch, row, columns)
    return RowWrite(
        key, static, inserted, batch.write_time_us[row], int(ttl) if ttl else None, cells
    )


def _columns_of(
    table: TableShape, batch: ChangeBatch, row: int, static: bool
) -> dict[str, ColumnKind]:
    """The columns a row may change: the static ones of a static row, the others else;
    a value for the other kind is refused by name."""
    mine, others = table.static_columns, table.row_columns
    if not static:
        mine, others = others, mine
    stray = [column for column in others if batch.touches(column, row)]
    if stray:
        what = "a static row" if static else "a clustering row"
        raise ReplayError(f"{table.name}: {what}'s change sets column(s) {', '.join(stray)}")
    return mine


def _inserted(
    batch: ChangeBatch, row: int, columns: dict[str, ColumnKind]
) -> tuple[CellChange, ...]:
    cells: list[CellChange] = []
    for column, kind in columns.items():
        value = batch.value(column, row)
        if value is not None or batch.is_deleted(column, row):
            cells.append(SetValue(column, value) if kind is ColumnKind.ATOMIC
                         else Overwrite(column, value))  # fmt: skip
    return tuple(cells)


def _updated(
    table: TableShape, batch: ChangeBatch, row: int, columns: dict[str, ColumnKind]
) -> tuple[CellChange, ...]:
    cells: list[CellChange] = []
    for column, kind in columns.items():
        value = batch.value(column, row)
        overwritten = batch.is_deleted(column, row)
        if kind is ColumnKind.ATOMIC:
            if value is not None or overwritten:
                cells.append(SetValue(column, value))
            continue
        if overwritten:
            cells.append(Overwrite(column, value))
        elif kind is ColumnKind.UDT:
            if value is not None:
                names = field_names(table, column)
                fields = tuple((f, v) for f, v in zip(names, value, strict=True) if v is not None)
                if fields:
                    cells.append(SetFields(column, fields))
        elif value:
            cells.append(AddElements(column, value))
        removed = batch.deleted_elements_of(column, row)
        if not removed:
            continue
        if kind is ColumnKind.UDT:
            cells.append(NullFields(column, fields_at(table, column, removed)))
        else:
            cells.append(RemoveElements(column, set(removed)))
    return tuple(cells)


def field_names(table: TableShape, column: str) -> tuple[str, ...]:
    names = table.fields.get(column)
    if names is None:
        raise ReplayError(f"{table.name}.{column}: the UDT's fields are unknown")
    return names


def fields_at(table: TableShape, column: str, indices: Iterable[int]) -> tuple[str, ...]:
    """The names of a user type's fields at ``indices`` (as the log numbers them), in
    the type's order; an index the type does not have is refused by name."""
    names = field_names(table, column)
    found = []
    for index in sorted(indices):
        if not 0 <= index < len(names):
            raise ReplayError(
                f"{table.name}.{column}: field index {index} logged as deleted, but the UDT "
                f"has {len(names)} field(s)"
            )
        found.append(names[index])
    return tuple(found)
