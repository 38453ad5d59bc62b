"""The sink table as the replay model needs it, and lake values as the driver binds them.

The sink table must have the source table's primary key and every data column the
lake holds, with the same CQL types: a replay into a table of another shape would
write other data than the source holds, so the run refuses it up front, naming the
columns. The lake stores some CQL types as text (uuid, timeuuid, inet, decimal,
varint; :mod:`cdcgen.changes.columns`) and collections as Arrow lists and maps; each
column gets the converter that turns the lake's value back into what the driver binds.
Tuples, UDTs, durations and vectors are stored as text the driver cannot bind back, so
a table holding one is refused by name.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from cdcgen.core.cdc_log import TableRef, deleted_elements_column
from cdcgen.core.replication import ColumnKind, ReplayError, SinkTable

Converter = Callable[[Any], Any]

_FROM_TEXT: dict[str, Converter] = {
    "uuid": uuid.UUID,
    "timeuuid": uuid.UUID,
    "decimal": Decimal,
    "varint": int,
}
_AS_STORED = frozenset(
    {
        "ascii", "bigint", "blob", "boolean", "counter", "date", "double", "float", "inet",
        "int", "smallint", "text", "time", "timestamp", "tinyint", "varchar",
    }
)  # fmt: skip


class SinkSchemaError(Exception):
    """Terminal: the sink table cannot receive the source table's changes."""


@dataclass(frozen=True)
class ParsedType:
    """A CQL type as ``system_schema`` spells it: ``frozen<map<text, int>>``."""

    name: str
    args: tuple[ParsedType, ...] = ()
    frozen: bool = False

    @classmethod
    def parse(cls, text: str) -> ParsedType:
        tokens = [t for t in re.split(r"\s*([<>,])\s*", text.strip()) if t]
        parsed, rest = cls._parse(tokens)
        if rest:
            raise SinkSchemaError(f"cannot read the CQL type {text!r}")
        return parsed

    @classmethod
    def _parse(cls, tokens: list[str]) -> tuple[ParsedType, list[str]]:
        if not tokens or tokens[0] in "<>,":
            raise SinkSchemaError(f"cannot read a CQL type from {''.join(tokens)!r}")
        name, rest = tokens[0], tokens[1:]
        if not rest or rest[0] != "<":
            return cls(name), rest
        args = []
        rest = rest[1:]
        while True:
            arg, rest = cls._parse(rest)
            args.append(arg)
            if rest and rest[0] == ",":
                rest = rest[1:]
            elif rest and rest[0] == ">":
                rest = rest[1:]
                break
            else:
                raise SinkSchemaError(f"cannot read a CQL type near {''.join(rest)!r}")
        if name == "frozen":
            return cls(args[0].name, args[0].args, frozen=True), rest
        return cls(name, tuple(args)), rest


def converter(kind: ParsedType, column: str) -> Converter:
    """Lake value -> driver value for a column of type ``kind``."""
    if kind.name in _AS_STORED:
        return lambda value: value
    if kind.name in _FROM_TEXT:
        parse = _FROM_TEXT[kind.name]
        return lambda value: None if value is None else parse(value)
    if kind.name in ("set", "list"):
        element = converter(kind.args[0], column)
        build: Callable[[Any], Any] = set if kind.name == "set" else list
        return lambda value: None if value is None else build(element(v) for v in value)
    if kind.name == "map":
        key, item = converter(kind.args[0], column), converter(kind.args[1], column)

        def convert_map(value: Any) -> Any:
            if value is None:
                return None
            pairs = value.items() if isinstance(value, Mapping) else value
            return {key(k): item(v) for k, v in pairs}

        return convert_map
    raise SinkSchemaError(
        f"column {column} of type {kind.name}: the lake keeps it as text, which cannot be "
        "bound back to the sink (tuples, UDTs, durations and vectors are not replicated)"
    )


def column_kind(kind: ParsedType) -> ColumnKind:
    """How the replay model writes a column: non-frozen collections by element."""
    if kind.frozen or kind.name not in ("set", "map", "list"):
        return ColumnKind.ATOMIC
    return ColumnKind[kind.name.upper()]


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
                except (ValueError, ArithmeticError) as exc:
                    raise ReplayError(f"{name}: {value!r} is not a value of it ({exc})") from None
        return out


def sink_shape(sink: TableRef, metadata: Any, source_columns: Sequence[str]) -> SinkShape:
    """Checks the sink table (driver ``TableMetadata``, None if absent) against the
    source's data columns (the lake's base columns) and builds its shape."""
    if metadata is None:
        raise SinkSchemaError(
            f"{sink} does not exist: create it with the source table's definition first"
        )
    partition = tuple(c.name for c in metadata.partition_key)
    clustering = tuple(c.name for c in metadata.clustering_key)
    keys = set(partition) | set(clustering)
    types = {name: ParsedType.parse(str(c.cql_type)) for name, c in metadata.columns.items()}
    missing = sorted(set(source_columns) - set(types))
    if missing:
        raise SinkSchemaError(f"{sink} has no column(s) {', '.join(missing)} of the source table")
    data = [name for name in source_columns if name not in keys]
    converters: dict[str, Converter] = {}
    for name in (*partition, *clustering, *data):
        converters[name] = converter(types[name], name)
        kind = types[name]
        if kind.name in ("set", "map") and not kind.frozen:
            element = kind.args[0]
            converters[deleted_elements_column(name)] = converter(
                ParsedType("set", (element,)), name
            )
    table = SinkTable(
        sink.keyspace,
        sink.table,
        partition,
        clustering,
        {name: column_kind(types[name]) for name in data},
    )
    return SinkShape(table, converters)
