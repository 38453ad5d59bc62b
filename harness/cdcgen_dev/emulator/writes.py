"""Random base writes for the workload: keys, values, and the change each write makes.

Every choice is drawn from the one ``random.Random`` the factory is given, in a fixed
order (never by iterating a set, whose order varies between runs), so a seed replays the
same writes. Updates mix every change ScyllaDB logs differently: values, nulls; for a
non-frozen set or map added elements, removed elements or an overwrite; for a non-frozen
list appended elements or an overwrite; for a non-frozen user type a whole value or
fields set (to values or null). A table with static columns gets writes of its rows, of
its static row with them, and of its static row alone. Range deletes cover both bounds,
one open side and a multi-column prefix. Values come from :mod:`.values`.

A table without static columns or other non-frozen shapes than sets draws exactly what
it always drew (the default ``orders`` workload replays as before).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from cdcgen.core.cdc_log import Operation
from cdcgen_dev.emulator.base_writes import (
    LIST_APPEND_LIMIT,
    RANGE_DELETE,
    BaseRowChange,
    BaseWrite,
    ClusteringRange,
    RangeBound,
)
from cdcgen_dev.emulator.log_schema import (
    BaseTableSpec,
    Column,
    ColumnType,
    TypeKind,
)
from cdcgen_dev.emulator.partition import PARTITION_KEY_TYPES
from cdcgen_dev.emulator.state import EmulatorError
from cdcgen_dev.emulator.values import ValueMaker, value_maker

#: Clustering key numbers a write draws from (0..15 unless it needs more rows).
CLUSTERING_KEYS = 16
#: Share of an update's chosen columns set to null (a tombstone).
NULL_FRACTION = 0.10
#: How an update changes a non-frozen collection column it does not set to null: add
#: (set elements, map entries, list elements appended), remove (set elements, map
#: keys; not list elements, whose cell keys only the base table knows), or overwrite.
SET_CHANGES: Mapping[str, float] = {"add": 0.60, "remove": 0.25, "overwrite": 0.15}
MAP_CHANGES: Mapping[str, float] = SET_CHANGES
LIST_CHANGES: Mapping[str, float] = {"add": 0.70, "overwrite": 0.30}
#: How an update changes a non-frozen user type column it does not set to null: a whole
#: new value, or some of its fields (each to a value, or to null).
UDT_CHANGES: Mapping[str, float] = {"overwrite": 0.40, "fields": 0.60}
FIELD_NULL_FRACTION = 0.25
#: Which rows an INSERT or UPDATE of a table with static columns touches: clustering
#: rows only, the static row with them, or the static row only.
STATIC_SHAPES: Mapping[str, float] = {"rows": 0.5, "both": 0.3, "static": 0.2}
#: A range delete's shape: both bounds, only a start, only an end, or (when a prefix
#: exists) the prefix alone (``ck1 = ?`` on a table with more clustering columns).
RANGE_SHAPES: Mapping[str, float] = {"both": 0.6, "start": 0.15, "end": 0.15, "prefix": 0.1}
#: The most elements a list value has (:mod:`.values`: one to three).
MAX_LIST_ELEMENTS = 3

_CHANGES: dict[TypeKind, Mapping[str, float]] = {
    TypeKind.SET: SET_CHANGES,
    TypeKind.MAP: MAP_CHANGES,
    TypeKind.LIST: LIST_CHANGES,
    TypeKind.UDT: UDT_CHANGES,
}


#: Key types whose values sort in Python as the database sorts them: what a clustering
#: column may be (a range delete orders its two bounds in Python).
ORDERED_KEY_TYPES = frozenset(
    {"int", "bigint", "smallint", "tinyint", "text", "varchar", "ascii", "blob"}
)


def key_maker(cql_type: str, keys: int) -> Callable[[int], Any]:
    """Key number -> key value, the same value for the same number: integers and text
    for every key column, blobs too (bytes sort alike in Python and in the database),
    UUIDs and time UUIDs (version 1) for partition keys only."""
    if cql_type in ("int", "bigint", "smallint", "tinyint"):
        return lambda n: n
    if cql_type in ("text", "varchar", "ascii"):
        return lambda n: f"k{n}"
    if cql_type == "blob":
        return lambda n: n.to_bytes(4, "big")
    if cql_type == "uuid":  # spread over the 128 bits, as random UUIDs are
        return lambda n: uuid.UUID(int=(n + 1) * 0x9E3779B97F4A7C15F39CC0605CEDC835 % (1 << 128))
    if cql_type == "timeuuid":
        return lambda n: uuid.UUID(fields=(n & 0xFFFFFFFF, 0, 0x1000, 0x80, 0, 0x0A0B0C0D0E0F))
    raise EmulatorError(f"the workload cannot generate keys of type {cql_type!r}")


class _ColumnValues:
    """Random values and changes of one data column."""

    def __init__(self, spec: BaseTableSpec, column: Column) -> None:
        user_types = {t.name: t for t in spec.user_types}
        self.name = column.name
        self.kind: ColumnType = column.type
        self.make: ValueMaker = value_maker(self.kind, user_types)
        self.changes = _CHANGES.get(self.kind.kind) if self.kind.is_multi_cell else None
        self.key: ValueMaker | None = None  # a map's keys, for removals
        if self.changes is not None and self.kind.kind is TypeKind.MAP:
            self.key = value_maker(self.kind.args[0], user_types, hashable=True)
        self.fields: list[tuple[str, ValueMaker]] = []
        if self.kind.kind is TypeKind.UDT:
            user_type = user_types[self.kind.name]
            self.fields = [(f.name, value_maker(f.type, user_types)) for f in user_type.fields]


class WriteFactory:
    """Builds random :class:`BaseWrite`s for one table spec.

    ``mix`` weighs the operations (:data:`~cdcgen_dev.emulator.base_writes.RANGE_DELETE`
    for range deletes). A table without clustering columns has no rows to delete apart
    from its partition and no range: a row delete becomes a partition delete there, and
    range deletes are left out.
    """

    def __init__(
        self,
        spec: BaseTableSpec,
        rng: random.Random,
        mix: Mapping[Operation, float],
        *,
        keys: int,
        hot_keys: bool = False,
        max_rows_per_write: int = 3,
        base_ttl: int | None = None,
    ) -> None:
        self.spec = spec
        self.rng = rng
        self.keys = keys
        self.hot_keys = hot_keys
        self.max_rows_per_write = max_rows_per_write
        self.base_ttl = base_ttl
        for column in spec.partition_key:
            if column.cql_type not in PARTITION_KEY_TYPES:
                raise EmulatorError(f"partition key type {column.cql_type!r} is not supported")
        for column in spec.clustering_key:
            if column.cql_type not in ORDERED_KEY_TYPES:
                raise EmulatorError(
                    f"clustering key type {column.cql_type!r} is not supported: the workload "
                    f"orders range bounds in Python ({', '.join(sorted(ORDERED_KEY_TYPES))})"
                )
        self.pk_makers = [key_maker(c.cql_type, keys) for c in spec.partition_key]
        self.ck_makers = [key_maker(c.cql_type, keys) for c in spec.clustering_key]
        self.values = [_ColumnValues(spec, c) for c in spec.regular_columns]
        self.statics = [_ColumnValues(spec, c) for c in spec.static_columns]
        lists = [c for c in self.values if c.changes and c.kind.kind is TypeKind.LIST]
        static_lists = [c for c in self.statics if c.changes and c.kind.kind is TypeKind.LIST]
        most = MAX_LIST_ELEMENTS * (len(lists) * max_rows_per_write + len(static_lists))
        if most > LIST_APPEND_LIMIT:
            raise EmulatorError(
                f"{spec.qualified_table}: a write could append {most} list elements, "
                f"ScyllaDB takes {LIST_APPEND_LIMIT}: lower max_rows_per_write"
            )
        usable = {op: w for op, w in mix.items() if spec.clustering_key or op is not RANGE_DELETE}
        self.operations = list(usable)
        self.weights = [usable[op] for op in self.operations]
        if sum(self.weights) <= 0:
            raise EmulatorError(f"{spec.qualified_table}: no operation of the mix applies")
        if not spec.clustering_key:
            # Without clustering rows a row delete is a partition delete.
            self.operations = [
                Operation.PARTITION_DELETE if op is Operation.ROW_DELETE else op
                for op in self.operations
            ]

    def key_number(self) -> int:
        if self.hot_keys and self.rng.random() < 0.8:
            return self.rng.randrange(max(1, self.keys // 5))
        return self.rng.randrange(self.keys)

    def make(self, timestamp_us: int) -> BaseWrite:
        rng = self.rng
        operation = rng.choices(self.operations, self.weights)[0]
        number = self.key_number()
        partition = tuple(make(number) for make in self.pk_makers)
        if operation is Operation.PARTITION_DELETE:
            return BaseWrite(operation, partition, (), timestamp_us)
        if operation is RANGE_DELETE:
            return BaseWrite(
                operation, partition, (), timestamp_us, clustering_range=self.clustering_range()
            )
        shape = "rows"
        if self.statics and operation is not Operation.ROW_DELETE:
            shape = rng.choices(list(STATIC_SHAPES), list(STATIC_SHAPES.values()))[0]
        static = None
        if shape != "rows":
            insert = operation is Operation.INSERT
            static = self.insert((), self.statics) if insert else self.update((), self.statics)
        rows = []
        if shape != "static":
            count = rng.randint(1, self.max_rows_per_write) if self.ck_makers else 1
            numbers = rng.sample(range(max(count, CLUSTERING_KEYS)), count)
            for ck in numbers:
                clustering = tuple(make(ck) for make in self.ck_makers)
                if operation is Operation.ROW_DELETE:
                    rows.append(BaseRowChange(clustering))
                elif operation is Operation.INSERT:
                    rows.append(self.insert(clustering, self.values))
                else:
                    rows.append(self.update(clustering, self.values))
        ttl = self.base_ttl if operation in (Operation.INSERT, Operation.UPDATE) else None
        return BaseWrite(operation, partition, tuple(rows), timestamp_us, ttl, static=static)

    def insert(
        self, clustering: tuple[Any, ...], columns: Sequence[_ColumnValues]
    ) -> BaseRowChange:
        """An inserted row (or static row): every one of ``columns`` a value."""
        return BaseRowChange(clustering, {c.name: c.make(self.rng) for c in columns})

    def update(
        self, clustering: tuple[Any, ...], columns: Sequence[_ColumnValues]
    ) -> BaseRowChange:
        """One updated row (or the static row): each chosen column of ``columns`` gets a
        value, a null or, for a non-frozen column, one of the changes its shape has."""
        rng = self.rng
        chosen = [c for c in columns if rng.random() < 0.7] or columns[:1]
        values: dict[str, Any] = {}
        removed: dict[str, Any] = {}
        overwritten: set[str] = set()
        fields: dict[str, dict[str, Any]] = {}
        for column in chosen:
            name = column.name
            if rng.random() < NULL_FRACTION:
                values[name] = None
                continue
            change = "add"
            if column.changes is not None:
                change = rng.choices(list(column.changes), list(column.changes.values()))[0]
            if change == "remove":
                removed[name] = self._removal(column)
            elif change == "fields":
                fields[name] = self._fields(column)
            else:
                values[name] = column.make(rng)
                if change == "overwrite" and column.kind.is_collection:
                    overwritten.add(name)
        return BaseRowChange(clustering, values, removed, frozenset(overwritten), fields)

    def _removal(self, column: _ColumnValues) -> Any:
        """Elements a set loses (drawn like a value) or keys a map loses."""
        if column.key is None:
            return column.make(self.rng)
        make = column.key
        return {make(self.rng) for _ in range(self.rng.randint(1, 2))}

    def _fields(self, column: _ColumnValues) -> dict[str, Any]:
        """Some fields of a user type (at least one), each a value or null."""
        rng = self.rng
        picked = [f for f in column.fields if rng.random() < 0.5] or column.fields[:1]
        return {
            name: None if rng.random() < FIELD_NULL_FRACTION else make(rng) for name, make in picked
        }

    def clustering_range(self) -> ClusteringRange:
        """A range over the clustering column after a random-length prefix of equalities."""
        rng = self.rng
        depth = rng.randrange(len(self.ck_makers))
        prefix = tuple(make(rng.randrange(CLUSTERING_KEYS)) for make in self.ck_makers[:depth])
        shapes = [s for s in RANGE_SHAPES if depth or s != "prefix"]
        shape = rng.choices(shapes, [RANGE_SHAPES[s] for s in shapes])[0]
        make = self.ck_makers[depth]
        # Two distinct keys, ordered by value (``k10`` < ``k2`` for text keys).
        low, high = sorted(make(n) for n in rng.sample(range(CLUSTERING_KEYS), 2))
        start = RangeBound(low, rng.random() < 0.5)
        end = RangeBound(high, rng.random() < 0.5)
        return ClusteringRange(
            prefix,
            start if shape in ("both", "start") else None,
            end if shape in ("both", "end") else None,
        )


def change_shapes(spec: BaseTableSpec, write: BaseWrite) -> Iterator[tuple[str, str]]:
    """What a write does, as ``(what, how)`` pairs: ``("write", "range_delete")``,
    ``("static", "only")``, ``("list", "add")``, ``("udt", "field_null")``... for a
    workload's coverage (every shape and operation it should make).

    ``what`` is a non-frozen column's kind (``set``, ``map``, ``list``, ``udt``, with
    ``static_`` before it for a static column), ``atomic`` or ``write``; ``how`` one of
    ``add``, ``remove``, ``overwrite``, ``null``, ``fields``, ``field_null``, ``value``.
    """
    label = "range_delete" if write.operation is RANGE_DELETE else write.operation.label
    yield ("write", label + ("_ttl" if write.ttl is not None else ""))
    if write.static is not None:
        yield ("static", "with_rows" if write.rows else "only")
    kinds = {c.name: c for c in spec.columns}
    for change in write.changes:
        for name, value in change.values.items():
            column = kinds[name]
            what = _shape_name(column)
            if value is None:
                yield (what, "null")
            elif what.endswith("atomic"):
                yield (what, "value")
            elif column.type.kind is TypeKind.UDT or write.operation is Operation.INSERT:
                yield (what, "overwrite")
            else:
                yield (what, "overwrite" if name in change.overwritten else "add")
        for name in change.removed:
            yield (_shape_name(kinds[name]), "remove")
        for name, assigned in change.fields.items():
            what = _shape_name(kinds[name])
            if any(v is not None for v in assigned.values()):
                yield (what, "fields")
            if any(v is None for v in assigned.values()):
                yield (what, "field_null")


def _shape_name(column: Column) -> str:
    kind = column.type
    what = kind.kind.value if kind.is_multi_cell else "atomic"
    return f"static_{what}" if column.static else what


#: Every ``(what, how)`` of :func:`change_shapes` a workload on
#: :func:`~cdcgen_dev.emulator.log_schema.every_shape_table` makes (with and without a
#: TTL): what its tests check it covered.
EVERY_SHAPE_CHANGES = {
    ("write", w) for w in ("insert", "update", "insert_ttl", "update_ttl", "row_delete")
} | {("write", "partition_delete"), ("write", "range_delete")} | {
    ("static", "only"), ("static", "with_rows"),
    ("atomic", "value"), ("atomic", "null"),
    ("static_atomic", "value"), ("static_atomic", "null"),
    *(("set", how) for how in ("add", "remove", "overwrite", "null")),
    *(("static_set", how) for how in ("add", "remove", "overwrite", "null")),
    *(("map", how) for how in ("add", "remove", "overwrite", "null")),
    *(("list", how) for how in ("add", "overwrite", "null")),
    *(("udt", how) for how in ("overwrite", "fields", "field_null", "null")),
    *(("static_udt", how) for how in ("overwrite", "fields", "field_null", "null")),
}  # fmt: skip
