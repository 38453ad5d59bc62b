"""How a bootstrap copies one source row into the sink table (pure).

The xCluster design's bootstrap: a copy taken at a recorded time ``S`` after which the
changes apply. Each copied cell must resolve later replayed changes as the source did,
so it keeps its own write time and remaining TTL, which CQL reads per atomic cell
(``WRITETIME``/``TTL``). Non-frozen collections, non-frozen UDTs and the row marker
have no time CQL can read; they are written at ``S - 1 µs``, older than every change the
apply brings, younger than nothing the copy must keep, and without a TTL (known
differences: an element or field with a TTL outlives its source's until a later change
replaces it, and a row inserted with a TTL stays on the sink, empty, once its cells
expire). A row created by ``UPDATE`` has no marker on the source but gets one on the
sink; it differs only once every cell of that row is deleted.

The copy reads the source in token ranges (``token(pk) > ? AND token(pk) <= ?``); every
row comes with its partition's static cells, which are written again with each row
(the same cells at the same times: idempotent), and a partition with only static cells
is one row with no clustering key, written by partition key without a marker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.identifiers import quote
from cdcgen.core.operations.table import ColumnKind, TableShape
from cdcgen.core.sink_statements import Statement


@dataclass(frozen=True)
class CopyLayout:
    """What the copy selects from the source for ``table``, and how a selected row is
    written back: keys, then value, write time and TTL of each atomic column, then each
    non-frozen column's value."""

    table: TableShape

    @cached_property
    def keys(self) -> tuple[str, ...]:
        return (*self.table.partition_key, *self.table.clustering_key)

    @cached_property
    def atomic(self) -> tuple[str, ...]:
        return tuple(c for c, k in self.table.columns.items() if k is ColumnKind.ATOMIC)

    @cached_property
    def multi(self) -> tuple[str, ...]:
        return tuple(c for c, k in self.table.columns.items() if k is not ColumnKind.ATOMIC)

    def select_cql(self, source: TableRef) -> str:
        """The range scan: bind ``(low, high]`` tokens of the partition key."""
        parts = [quote(k) for k in self.keys]
        for column in self.atomic:
            name = quote(column)
            parts += [name, f"WRITETIME({name})", f"TTL({name})"]
        parts += [quote(c) for c in self.multi]
        token = ", ".join(quote(k) for k in self.table.partition_key)
        return (
            f"SELECT {', '.join(parts)} FROM {quote(source.keyspace)}.{quote(source.table)} "
            f"WHERE token({token}) > ? AND token({token}) <= ?"
        )

    def statements(self, row: Sequence[Any], snapshot_us: int) -> list[Statement]:
        """The writes of one selected row (one single-partition batch)."""
        table = self.table
        width = len(self.keys)
        keys = tuple(row[:width])
        clustering = keys[len(table.partition_key) :]
        static_only = bool(clustering) and all(v is None for v in clustering)
        older = snapshot_us - 1
        out: list[Statement] = []
        if not static_only:
            out.append(self._marker(keys, older))
        atomic = row[width : width + 3 * len(self.atomic)]
        multi = row[width + 3 * len(self.atomic) :]
        for i, column in enumerate(self.atomic):
            value, written, ttl = atomic[3 * i : 3 * i + 3]
            if value is not None and self._writes(column, static_only):
                bound = (written, ttl, value) if ttl else (written, value)
                cql = self._atomic_cql[column, bool(ttl)]
                out.append(Statement(cql, (*bound, *keys[: self._key_width[column]])))
        for column, value in zip(self.multi, multi, strict=True):
            if value and self._writes(column, static_only):
                out.extend(self._update_multi(column, value, keys, older))
        return out

    def _writes(self, column: str, static_only: bool) -> bool:
        """A static-only row carries only static cells; every row carries its statics."""
        return column in self.table.static or not static_only

    def _marker(self, keys: tuple[Any, ...], at: int) -> Statement:
        return Statement(self._marker_cql, (*keys, at))

    @cached_property
    def _marker_cql(self) -> str:
        names = ", ".join(quote(k) for k in self.keys)
        marks = ", ".join("?" for _ in self.keys)
        return f"INSERT INTO {self.table.qualified} ({names}) VALUES ({marks}) USING TIMESTAMP ?"

    @cached_property
    def _key_width(self) -> dict[str, int]:
        """How many leading keys address each column: the partition key for a static one."""
        return {
            c: len(self.table.partition_key if c in self.table.static else self.keys)
            for c in self.table.columns
        }

    @cached_property
    def _atomic_cql(self) -> dict[tuple[str, bool], str]:
        """Each atomic column's update, without and with a TTL (built once per table)."""
        return {
            (c, ttl): self._update_cql(
                "USING TIMESTAMP ?" + (" AND TTL ?" if ttl else ""), f"{quote(c)} = ?", c
            )
            for c in self.atomic
            for ttl in (False, True)
        }

    def _update_cql(self, using: str, sets: str, column: str) -> str:
        names = self.keys[: self._key_width[column]]
        where = " AND ".join(f"{quote(k)} = ?" for k in names)
        return f"UPDATE {self.table.qualified} {using} SET {sets} WHERE {where}"

    def _update(
        self, using: str, sets: str, bound: tuple[Any, ...], column: str, keys: tuple[Any, ...]
    ) -> Statement:
        cql = self._update_cql(using, sets, column)
        return Statement(cql, (*bound, *keys[: self._key_width[column]]))

    @cached_property
    def _added_cql(self) -> dict[str, str]:
        """Each non-frozen collection's elements added (built once per table)."""
        return {
            c: self._update_cql("USING TIMESTAMP ?", f"{quote(c)} = {quote(c)} + ?", c)
            for c in self.multi
            if self.table.columns[c] is not ColumnKind.UDT
        }

    def _update_multi(
        self, column: str, value: Any, keys: tuple[Any, ...], at: int
    ) -> list[Statement]:
        """A non-frozen collection's elements added, or a non-frozen UDT's fields set."""
        name = quote(column)
        using = "USING TIMESTAMP ?"
        if self.table.columns[column] is not ColumnKind.UDT:
            cql = self._added_cql[column]
            return [Statement(cql, (at, value, *keys[: self._key_width[column]]))]
        fields = self.table.fields[column]
        pairs = [(f, v) for f, v in zip(fields, value, strict=True) if v is not None]
        if not pairs:
            return []
        sets = ", ".join(f"{name}.{quote(f)} = ?" for f, _ in pairs)
        return [self._update(using, sets, (at, *(v for _, v in pairs)), column, keys)]
