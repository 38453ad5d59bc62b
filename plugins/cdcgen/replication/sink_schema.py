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
binds (:func:`cdcgen.changes.codec.decoder`, the inverse of how the lake
stores each CQL type), from the driver's type of the column.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdcgen.changes.codec import (
    Converter,
    arrow_type_and_converter,
    change_batch,
    decoder,
    holds_text_for_struct,
    removed_decoder,
)
from cdcgen.core.cdc_log import TableRef, deleted_elements_column
from cdcgen.core.change_batch import ChangeBatch
from cdcgen.core.cql_types import ParsedType
from cdcgen.core.errors import CqlTypeError
from cdcgen.core.operations.table import ColumnKind, TableShape
from cdcgen.core.table_definition import TableDefinition, UserTypes
from cdcgen.replication.errors import SinkSchemaError

if TYPE_CHECKING:
    import pyarrow as pa

_COLLECTIONS = ("set", "list", "map")


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


def kept_as_text(cqltype: type, stored: pa.DataType) -> bool:
    """Whether the lake holds a struct-stored type (UDT, tuple, duration) of the column
    as text: a column an earlier lake version wrote."""
    wanted, _ = arrow_type_and_converter(cqltype)
    return holds_text_for_struct(stored, wanted)


@dataclass(frozen=True)
class SinkShape:
    """The sink table for the CQL rules, and how each lake column it binds is decoded
    for the driver."""

    table: TableShape
    decoders: Mapping[str, Converter]

    def batch_of(self, changes: pa.Table) -> ChangeBatch:
        """Lake rows of the source table as the sink binds them."""
        return change_batch(changes, self.decoders)


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
    decoders: dict[str, Converter] = {}
    fields: dict[str, tuple[str, ...]] = {}
    for name in (*source.partition_key, *source.clustering_key, *data):
        decode = decoder(source.cqltypes[name])
        if decode is not None:
            decoders[name] = decode
    for name, kind in kinds.items():
        if kind is ColumnKind.UDT:
            fields[name] = tuple(f for f, _ in udts[types[name].name])
        if kind is not ColumnKind.ATOMIC:
            removed = removed_decoder(kind, source.cqltypes[name])
            decoders[deleted_elements_column(name)] = removed
    table = TableShape(
        sink.ref.keyspace,
        sink.ref.table,
        source.partition_key,
        source.clustering_key,
        kinds,
        static=frozenset(source.static),
        fields=fields,
        descending=source.descending,
    )
    return SinkShape(table, decoders)


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
