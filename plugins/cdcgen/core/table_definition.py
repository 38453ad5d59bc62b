"""A table's definition as replication compares a source with its sink (pure): its
keys, each column's CQL type as ``system_schema`` spells it, its static columns, its
keyspace's user types, its clustering order and default TTL."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.cql_types import ParsedType
from cdcgen.core.identifiers import quote

#: A keyspace's user types: name -> its fields ``(name, type)`` in order.
UserTypes = Mapping[str, tuple[tuple[str, ParsedType], ...]]


@dataclass(frozen=True)
class TableDefinition:
    """A table as the driver describes it; ``cqltypes``: each column's type as the
    driver's type class (``cassandra.cqltypes``), which is what the lake's values are
    converted back for."""

    ref: TableRef
    partition_key: tuple[str, ...]
    clustering_key: tuple[str, ...]
    types: Mapping[str, str]
    static: frozenset[str] = frozenset()
    user_types: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    cqltypes: Mapping[str, type] = field(default_factory=dict)
    #: Clustering columns sorted ``DESC``.
    descending: frozenset[str] = frozenset()
    #: ``default_time_to_live``: a cell written without a TTL gets it.
    default_ttl: int = 0

    @property
    def data_columns(self) -> list[str]:
        keys = {*self.partition_key, *self.clustering_key}
        return [name for name in self.types if name not in keys]

    def parsed_user_types(self) -> UserTypes:
        return {
            name: tuple((f, ParsedType.parse(t)) for f, t in fields)
            for name, fields in self.user_types.items()
        }


def add_column_cql(table: TableRef, column: str, cql_type: str, static: bool) -> str:
    """``ALTER TABLE <table> ADD <column> <type> [STATIC]``."""
    qualified = f"{quote(table.keyspace)}.{quote(table.table)}"
    return f"ALTER TABLE {qualified} ADD {quote(column)} {cql_type}{' STATIC' if static else ''}"
