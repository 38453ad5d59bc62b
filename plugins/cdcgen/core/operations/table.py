"""A CDC table as the CQL rules see it: its keys, how each column changes, its static
columns, its user types' fields and its clustering order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property

from cdcgen.core.identifiers import quote


class ColumnKind(Enum):
    """How a data column changes: one cell, or a non-frozen type's cells of its own (a
    set's elements, a map's entries, a list's elements, a user type's fields).

    A non-frozen list's log column is a map of its cells' keys (time UUIDs) to their
    values, and its removed elements are those keys: a list changes as a map does, and
    reads as its values in key order. CQL cannot write a list's cell by key, so the sink
    refuses it (:mod:`cdcgen.replication.sink_schema`); a mirror keeps it.
    """

    ATOMIC = "atomic"
    SET = "set"
    MAP = "map"
    LIST = "list"
    UDT = "udt"


@dataclass(frozen=True)
class TableShape:
    """The table the rules apply to (named as the writes target it: the sink's table).

    ``static``: its static columns (changed by rows of their own, by partition key);
    ``fields``: each non-frozen UDT column's field names, in order (the log names a
    field set to null by its index); ``descending``: its clustering columns sorted
    ``DESC`` (a range delete's bounds are logged in clustering order).
    """

    keyspace: str
    table: str
    partition_key: tuple[str, ...]
    clustering_key: tuple[str, ...] = ()
    columns: Mapping[str, ColumnKind] = field(default_factory=dict)
    static: frozenset[str] = frozenset()
    fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    descending: frozenset[str] = frozenset()

    @cached_property
    def qualified(self) -> str:
        return f"{quote(self.keyspace)}.{quote(self.table)}"

    @cached_property
    def primary_key(self) -> tuple[str, ...]:
        return (*self.partition_key, *self.clustering_key)

    @cached_property
    def row_columns(self) -> dict[str, ColumnKind]:
        """The columns a clustering row's change may set (every column of a table
        without clustering key)."""
        return {c: k for c, k in self.columns.items() if c not in self.static}

    @cached_property
    def static_columns(self) -> dict[str, ColumnKind]:
        """The columns a static row's change may set."""
        return {c: k for c, k in self.columns.items() if c in self.static}

    @property
    def name(self) -> str:
        """``keyspace.table`` as errors name it."""
        return f"{self.keyspace}.{self.table}"
