"""The mutations of a CDC batch as the CQL statements that replay them on a sink (pure).

The rules of the YugabyteDB xCluster design, on the mutations ScyllaDB's log rows make
(:mod:`cdcgen.core.operations`):

* **Last writer wins by the original timestamp.** Every statement carries ``USING
  TIMESTAMP`` of the change's write time, so replaying a change twice, or late, can
  never overwrite a newer one: the sink resolves it as the source did.
* **A CDC batch is one unit.** A base mutation touches one partition, so its statements
  go in one single-partition batch (the apply's), which Cassandra and ScyllaDB apply
  atomically and in isolation.
* **A TTL counts from the original write.** Replayed later, the cells get what is left
  of it at the sink's clock; a write that has expired by then is written as its
  tombstones (:func:`cdcgen.core.operations.ttl_expiry.expired`), since CQL cannot write a
  dead row marker.
* An insert is ``INSERT`` (its row marker and cells), an update ``UPDATE`` of its cells
  (a collection's elements added with ``col = col + ?``, removed with ``col = col - ?``
  in a statement of their own, a user type's fields with ``col.field = ?``), deletes are
  ``DELETE``.

Names come from the sink table's definition and are quoted; values are bound, never
pasted.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from cdcgen.core.frozen import frozen_value
from cdcgen.core.identifiers import quote
from cdcgen.core.operations.errors import ReplayError
from cdcgen.core.operations.mutations import (
    REMOVALS,
    WHOLE_VALUES,
    AddElements,
    CellChange,
    Mutation,
    NullFields,
    PartitionDelete,
    RangeDelete,
    RemoveElements,
    RowDelete,
    RowWrite,
    SetFields,
)
from cdcgen.core.operations.table import TableShape
from cdcgen.core.operations.ttl_expiry import expired, remaining_ttl


@frozen_value
class Statement:
    """One CQL statement with its bound values."""

    cql: str
    values: tuple[Any, ...]


def statements(table: TableShape, parts: Sequence[Mutation], *, now_us: int) -> list[Statement]:
    """The statements that replay one CDC batch's mutations, with TTLs counted down to
    ``now_us`` (the sink's clock)."""
    out: list[Statement] = []
    for part in parts:
        if isinstance(part, RowWrite):
            out.extend(_row_write(table, part, now_us))
        elif isinstance(part, RangeDelete):
            out.append(_range_delete(table, part))
        else:
            out.append(_delete(table, part))
    return out


def _row_write(table: TableShape, write: RowWrite, now_us: int) -> list[Statement]:
    ttl = None
    if write.ttl:
        ttl = remaining_ttl(write.write_time_us, write.ttl, now_us)
        if ttl <= 0:
            write, ttl = expired(table, write), None
    using, using_values = _using(write.write_time_us, ttl)
    names = table.partition_key if write.static else table.primary_key
    if write.marker:
        columns = tuple(cell.column for cell in write.cells)
        values = (*write.key, *(_value(cell) for cell in write.cells), *using_values)
        return [Statement(_insert_cql(table.qualified, (*names, *columns), using), values)]
    where = _equalities(names)
    main = [_assignment(cell) for cell in write.cells if not isinstance(cell, REMOVALS)]
    removals = [_removal(cell) for cell in write.cells if isinstance(cell, REMOVALS)]
    out = []
    for group in (main, removals):
        if not group:
            continue
        sets = tuple(a for part in group for a, _ in part)
        assigned = tuple(v for part in group for _, v in part)
        cql = _update_cql(table.qualified, using, sets, where)
        out.append(Statement(cql, (*using_values, *assigned, *write.key)))
    return out


def _value(cell: CellChange) -> Any:
    """An inserted cell's value (an insert writes a collection or user type whole)."""
    if isinstance(cell, WHOLE_VALUES):
        return cell.value
    raise ReplayError(f"column {cell.column}: an insert cannot {type(cell).__name__}")


Assignment = tuple[tuple[str, Any], ...]


def _assignment(cell: CellChange) -> Assignment:
    name = quote(cell.column)
    if isinstance(cell, WHOLE_VALUES):
        return ((f"{name} = ?", cell.value),)
    if isinstance(cell, AddElements):
        return ((f"{name} = {name} + ?", cell.elements),)
    if isinstance(cell, SetFields):
        return tuple((f"{name}.{quote(f)} = ?", v) for f, v in cell.fields)
    raise ValueError(f"not an assignment: {cell!r}")


def _removal(cell: RemoveElements | NullFields) -> Assignment:
    name = quote(cell.column)
    if isinstance(cell, RemoveElements):
        return ((f"{name} = {name} - ?", cell.keys),)
    return tuple((f"{name}.{quote(f)} = ?", None) for f in cell.fields)


def _delete(table: TableShape, part: RowDelete | PartitionDelete) -> Statement:
    names = table.partition_key if isinstance(part, PartitionDelete) else (
        table.primary_key[: len(part.key)]
    )  # fmt: skip
    where = _equalities(names)
    return Statement(
        f"DELETE FROM {table.qualified} USING TIMESTAMP ? WHERE {where}",
        (part.write_time_us, *part.key),
    )


def _range_delete(table: TableShape, part: RangeDelete) -> Statement:
    """The ``DELETE`` of a range tombstone.

    The bounds come in clustering order: on a column sorted descending, the start bound
    holds the larger value. CQL compares relations by value. So the bounds' common
    prefix becomes equalities, and each bound's rest one relation on the columns after
    it, turned around where they sort descending. A rest over columns of both orders has
    no value-order form in CQL and is refused by name (a ``DELETE`` a user writes never
    makes one: its range is a prefix and one column).
    """
    lower, upper = part.start.prefix, part.end.prefix
    common = 0
    while common < min(len(lower), len(upper)) and lower[common] == upper[common]:
        common += 1
    # A user's DELETE bounds one column past a shared prefix: equalities, then one plain
    # relation per bound. A bound over several more columns needs tuple relations, which
    # CQL refuses to mix with plain ones on clustering columns: then every bound is a
    # tuple over its whole prefix.
    single = all(len(prefix) - common <= 1 for prefix in (lower, upper))
    clauses = [_equalities(table.partition_key)]
    values = list(part.key)
    if single:
        clauses += [f"{quote(name)} = ?" for name in table.clustering_key[:common]]
        values += lower[:common]
    for bound, is_start in ((part.start, True), (part.end, False)):
        first = common if single else 0
        names = table.clustering_key[first : len(bound.prefix)]
        if not names:
            continue  # open past the shared prefix
        orders = {name in table.descending for name in names}
        if len(orders) > 1:
            raise ReplayError(
                f"{table.name}: a range delete bounded on clustering columns of both orders "
                f"({', '.join(names)}) at {part.write_time_us} has no CQL form"
            )
        from_below = is_start != orders.pop()  # a start bound is a lower one on ASC
        relation = (">" if from_below else "<") + ("=" if bound.inclusive else "")
        quoted = ", ".join(quote(n) for n in names)
        marks = ", ".join("?" for _ in names)
        clauses.append(f"{quoted} {relation} ?" if single else f"({quoted}) {relation} ({marks})")
        values.extend(bound.prefix[first:])
    cql = f"DELETE FROM {table.qualified} USING TIMESTAMP ? WHERE {' AND '.join(clauses)}"
    return Statement(cql, (part.write_time_us, *values))


@lru_cache(maxsize=1024)
def _equalities(names: tuple[str, ...]) -> str:
    """``"a" = ? AND "b" = ?``: a WHERE clause or its key part."""
    return " AND ".join(f"{quote(n)} = ?" for n in names)


@lru_cache(maxsize=4096)
def _insert_cql(table: str, names: tuple[str, ...], using: str) -> str:
    columns = ", ".join(quote(n) for n in names)
    marks = ", ".join("?" for _ in names)
    return f"INSERT INTO {table} ({columns}) VALUES ({marks}) {using}"


@lru_cache(maxsize=4096)
def _update_cql(table: str, using: str, sets: tuple[str, ...], where: str) -> str:
    return f"UPDATE {table} {using} SET {', '.join(sets)} WHERE {where}"


def _using(write_time_us: int, ttl: int | None) -> tuple[str, tuple[Any, ...]]:
    if ttl:
        return "USING TIMESTAMP ? AND TTL ?", (write_time_us, int(ttl))
    return "USING TIMESTAMP ?", (write_time_us,)
