"""The sink table checked against the source's, and lake values as the driver binds them.

A replay into a table of another shape would write other data than the source holds, so
a run compares both definitions up front and refuses, naming the columns, before it
applies any change: the same primary key and clustering order, every source column with
the same CQL type (and the same user types, field by field), the same static columns,
the same default TTL.

Some column shapes cannot be replayed exactly and are refused by name here, never half
way through a run: non-frozen lists (the log keys their cells by time UUIDs, which CQL
cannot choose on an append, so a replayed append is not idempotent, nor read back after
a copy, so an element copied by a bootstrap could not be removed later), counters (CDC
refuses them), vectors, and columns an earlier version of the lake kept as text (UDTs,
tuples and durations, now stored as structs: :mod:`cdcgen.changes.columns`).

Each column gets the converter that turns the lake's value back into what the driver
binds (:func:`cdcgen.changes.arrow_types.driver_converter`, the inverse of how the lake
stores each CQL type), from the driver's type of the column.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdcgen.changes.arrow_types import (
    arrow_type_and_converter,
    driver_converter,
    holds_text_for_struct,
)
from cdcgen.core.cdc_log import TableRef, deleted_elements_column
from cdcgen.core.cql_types import CqlTypeError, ParsedType
from cdcgen.core.errors import TerminalError
from cdcgen.core.replication import ColumnKind, ReplayError, SinkTable

if TYPE_CHECKING:
    import pyarrow as pa

Converter = Callable[[Any], Any]

_COLLECTIONS = ("set", "list", "map")


class SinkSchemaError(TerminalError):
    """Terminal: the sink table cannot receive the source table's changes."""

    next_step = (
        "no change reaches this sink table until it can take them: create or alter it "
        "to the source table's definition (docs/replication.md), then clear the task"
    )


#: A keyspace's user types: name -> its fields ``(name, type)`` in order.
UserTypes = Mapping[str, tuple[tuple[str, ParsedType], ...]]


@dataclass(frozen=True)
class TableDefinition:
    """A table as replication compares it: its keys, each column's CQL type as
    ``system_schema`` spells it, its static columns and its keyspace's user types."""

    ref: TableRef
    partition_key: tuple[str, ...]
    clustering_key: tuple[str, ...]
    types: Mapping[str, str]
    static: frozenset[str] = frozenset()
    user_types: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    #: Each column's type as the driver's type class (``cassandra.cqltypes``), which is
    #: what the lake's values are converted back for.
    cqltypes: Mapping[str, Any] = field(default_factory=dict)
    #: Clustering columns sorted ``DESC``.
    descending: frozenset[str] = frozenset()
    #: ``default_time_to_live``: a cell written without a TTL gets it.
    default_ttl: int = 0

    @classmethod
    def from_driver(
        cls, ref: TableRef, table: Any, keyspace: Any, cqltypes: Mapping[str, Any]
    ) -> TableDefinition:
        """From the driver's ``TableMetadata``, ``KeyspaceMetadata`` and the type classes
        of a statement's result metadata."""
        return cls(
            ref,
            tuple(c.name for c in table.partition_key),
            tuple(c.name for c in table.clustering_key),
            {name: str(c.cql_type) for name, c in table.columns.items()},
            frozenset(name for name, c in table.columns.items() if c.is_static),
            {
                name: tuple(zip(udt.field_names, map(str, udt.field_types), strict=True))
                for name, udt in keyspace.user_types.items()
            },
            cqltypes,
            frozenset(c.name for c in table.clustering_key if c.is_reversed),
            int(table.options.get("default_time_to_live") or 0),
        )

    @property
    def data_columns(self) -> list[str]:
        keys = {*self.partition_key, *self.clustering_key}
        return [name for name in self.types if name not in keys]

    def parsed_user_types(self) -> UserTypes:
        return {
            name: tuple((f, ParsedType.parse(t)) for f, t in fields)
            for name, fields in self.user_types.items()
        }


def is_udt(kind: ParsedType, udts: UserTypes) -> bool:
    return not kind.args and kind.name in udts


def column_kind(kind: ParsedType, column: str, udts: UserTypes | None = None) -> ColumnKind:
    """How the replay model writes a column: non-frozen sets, maps and UDTs by element;
    a non-frozen list or a counter is refused by name."""
    udts = udts or {}
    if kind.name == "counter":
        raise SinkSchemaError(f"column {column} is a counter: CDC does not log counter tables")
    if _as_opaque_text(kind, udts):
        raise SinkSchemaError(
            f"column {column} of type {kind.name}: the lake keeps a vector or a custom type "
            "as text, which cannot be bound back to the sink, so it is not replicated"
        )
    if kind.frozen or (kind.name not in _COLLECTIONS and not is_udt(kind, udts)):
        return ColumnKind.ATOMIC
    if kind.name == "list":
        raise SinkSchemaError(
            f"column {column} is a non-frozen list: its cells are keyed by time UUIDs that "
            "CQL cannot choose on an append (a replayed append would add the element again) "
            "nor read back (an element a bootstrap copied could never be removed by its "
            "key); replicate a frozen<list<...>>, a set or a map instead"
        )
    if kind.name in _COLLECTIONS:
        return ColumnKind[kind.name.upper()]
    return ColumnKind.UDT


def _as_opaque_text(kind: ParsedType, udts: UserTypes) -> bool:
    """A vector or a custom (Java class) type anywhere in ``kind``: the lake's text."""
    if kind.name == "vector" or "." in kind.name or "'" in kind.name:
        return True
    inner = [t for _, t in udts.get(kind.name, ())] if is_udt(kind, udts) else []
    return any(_as_opaque_text(a, udts) for a in (*kind.args, *inner))


#: Types whose lake value is what the driver binds (no converter is needed).
_AS_STORED = frozenset(
    {
        "ascii", "bigint", "blob", "boolean", "date", "double", "float", "inet", "int",
        "smallint", "text", "time", "timestamp", "tinyint", "varchar",
    }
)  # fmt: skip


def converter(cqltype: Any) -> Converter | None:
    """Lake value -> driver value for a column of the driver's type ``cqltype``; None
    when the lake's value is bound as it is."""
    if str(getattr(cqltype, "typename", "")) in _AS_STORED:
        return None
    return driver_converter(cqltype)


def removed_converter(kind: ColumnKind, cqltype: Any) -> Converter:
    """``cdc$deleted_elements_<col>`` -> what the replay removes: a set's elements, a
    map's keys, a UDT's field indices."""
    if kind is ColumnKind.UDT:
        return lambda value: {int(v) for v in value}
    element = driver_converter(cqltype.subtypes[0], hashable=True)
    if element is None:
        return set
    return lambda value: set(map(element, value))


def kept_as_text(cqltype: Any, stored: pa.DataType) -> bool:
    """Whether the lake holds a struct-stored type (UDT, tuple, duration) of the column
    as text: a column an earlier lake version wrote."""
    wanted, _ = arrow_type_and_converter(cqltype)
    return holds_text_for_struct(stored, wanted)


@dataclass(frozen=True)
class SinkShape:
    """The sink table for the replay model, and a converter per lake column it binds."""

    table: SinkTable
    converters: Mapping[str, Converter]

    def driver_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """A lake row with every bound column converted (others as they are)."""
        out = dict(row)
        for name, convert in self.converters.items():
            value = out.get(name)
            if value is not None:
                try:
                    out[name] = convert(value)
                except (ValueError, ArithmeticError, KeyError, TypeError) as exc:
                    raise ReplayError(f"{name}: {value!r} is not a value of it ({exc})") from None
        return out


def sink_shape(
    source: TableDefinition,
    sink_table: TableRef,
    sink: TableDefinition | None,
    lake_types: Mapping[str, pa.DataType] | None = None,
) -> SinkShape:
    """Checks the sink table (``sink``: its definition, None if it does not exist)
    against the source table, and the lake's column types when its table exists, and
    builds the replay's shape; :class:`SinkSchemaError` names what differs or cannot be
    replicated."""
    if sink is None:
        raise SinkSchemaError(
            f"{sink_table} does not exist: create it with the definition of {source.ref} first"
        )
    try:
        return _checked(source, sink, lake_types or {})
    except CqlTypeError as exc:
        raise SinkSchemaError(f"{sink_table}: {exc}") from None


def _checked(
    source: TableDefinition, sink: TableDefinition, lake_types: Mapping[str, pa.DataType]
) -> SinkShape:
    where = f"{sink.ref} (sink of {source.ref})"
    if (sink.partition_key, sink.clustering_key) != (source.partition_key, source.clustering_key):
        raise SinkSchemaError(
            f"{where}: primary key ({', '.join(sink.partition_key)}; "
            f"{', '.join(sink.clustering_key)}) differs from the source's "
            f"({', '.join(source.partition_key)}; {', '.join(source.clustering_key)})"
        )
    missing = [c for c in source.types if c not in sink.types]
    if missing:
        raise SinkSchemaError(f"{where} has no column(s) {', '.join(missing)} of the source")
    differ = [
        f"{c} {sink.types[c]} (source: {source.types[c]})"
        for c in source.types
        if _normal(sink.types[c]) != _normal(source.types[c])
    ]
    static = sorted(source.static ^ (sink.static & set(source.types)))
    if differ or static:
        what = differ + [f"{c} static on one side only" for c in static]
        raise SinkSchemaError(f"{where}: column(s) differ: {'; '.join(what)}")
    if sink.descending != source.descending:
        raise SinkSchemaError(
            f"{where}: clustering order differs (descending on the sink: "
            f"{', '.join(sorted(sink.descending)) or 'none'}; on the source: "
            f"{', '.join(sorted(source.descending)) or 'none'})"
        )
    if sink.default_ttl != source.default_ttl:
        raise SinkSchemaError(
            f"{where}: default_time_to_live {sink.default_ttl} differs from the source's "
            f"{source.default_ttl}: cells replayed without a TTL would expire otherwise"
        )
    udts = source.parsed_user_types()
    for name in _udts_used(source, udts):
        if source.user_types.get(name) != sink.user_types.get(name):
            raise SinkSchemaError(
                f"{where}: user type {name} differs from the source's "
                f"({sink.user_types.get(name)} against {source.user_types.get(name)})"
            )
    return _shape(source, sink, udts, lake_types)


def _shape(
    source: TableDefinition,
    sink: TableDefinition,
    udts: UserTypes,
    lake_types: Mapping[str, pa.DataType],
) -> SinkShape:
    types = {name: ParsedType.parse(text) for name, text in source.types.items()}
    data = source.data_columns
    kinds = {name: column_kind(types[name], name, udts) for name in data}
    missing = [name for name in source.types if name not in source.cqltypes]
    if missing:
        raise SinkSchemaError(f"{source.ref}: no driver type for column(s) {', '.join(missing)}")
    stale = [
        name
        for name, cqltype in source.cqltypes.items()
        if name in lake_types and kept_as_text(cqltype, lake_types[name])
    ]
    if stale:
        raise SinkSchemaError(
            f"{sink.ref}: the lake keeps column(s) {', '.join(stale)} of {source.ref} as text "
            "(written by an earlier version, before UDTs, tuples and durations were stored "
            "as structs), which cannot be bound back; re-bootstrap the changes of "
            f"{source.ref} into a new lake table to replicate it"
        )
    converters: dict[str, Converter] = {}
    fields: dict[str, tuple[str, ...]] = {}
    for name in (*source.partition_key, *source.clustering_key, *data):
        convert = converter(source.cqltypes[name])
        if convert is not None:
            converters[name] = convert
    for name, kind in kinds.items():
        if kind is ColumnKind.UDT:
            fields[name] = tuple(f for f, _ in udts[types[name].name])
        if kind is not ColumnKind.ATOMIC:
            removed = removed_converter(kind, source.cqltypes[name])
            converters[deleted_elements_column(name)] = removed
    table = SinkTable(
        sink.ref.keyspace,
        sink.ref.table,
        source.partition_key,
        source.clustering_key,
        kinds,
        static=frozenset(source.static),
        fields=fields,
        descending=source.descending,
    )
    return SinkShape(table, converters)


def _udts_used(table: TableDefinition, udts: UserTypes) -> list[str]:
    """Every user type a column of ``table`` uses, nested ones included."""
    found: list[str] = []

    def visit(kind: ParsedType) -> None:
        if is_udt(kind, udts) and kind.name not in found:
            found.append(kind.name)
            for _, inner in udts[kind.name]:
                visit(inner)
        for arg in kind.args:
            visit(arg)

    for text in table.types.values():
        visit(ParsedType.parse(text))
    return found


def _normal(text: str) -> str:
    return re.sub(r"\s+", "", text)
