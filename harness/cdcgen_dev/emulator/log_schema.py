"""A CDC-enabled base table and its ``<table>_scylla_cdc_log``, with ScyllaDB's exact schema.

``create_log_schema`` in ScyllaDB's ``cdc/log.cc`` decides the log table's shape:

* ``"cdc$stream_id" blob`` (partition key), ``"cdc$time" timeuuid`` and
  ``"cdc$batch_seq_no" int`` (clustering), then ``"cdc$operation" tinyint``,
  ``"cdc$ttl" bigint``, ``"cdc$end_of_batch" boolean``;
* the base partition and clustering key columns as regular columns, same names and types;
* every static and regular base column, plus ``"cdc$deleted_<col>" boolean``; a
  non-frozen collection is stored frozen (a non-frozen ``list<T>`` as
  ``frozen<map<timeuuid, T>>``) and gets ``"cdc$deleted_elements_<col>"``, a frozen set
  of its keys (``timeuuid`` for lists);
* options: TimeWindowCompactionStrategy with a window of ``ceil(ttl / 24)`` seconds
  rounded up to minutes, ``gc_grace_seconds = 0`` when the TTL is positive, caching off,
  comment ``CDC log for <ks>.<table>``.

The CDC TTL itself is not a table option in ScyllaDB (it is the base table's ``cdc``
option): log rows are written ``USING TTL``. Cassandra has no such option, so the emulator
records it in its own table (:mod:`cdcgen_dev.emulator.state`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from cdcgen.core import cdc_log as log
from cdcgen.core.cdc_log import LOG_SUFFIX, quote_column
from cdcgen.core.identifiers import check_identifier

DEFAULT_CDC_TTL = 86_400

# The metadata columns as they appear in CQL text (quoted: ``$`` needs it).
STREAM_ID, TIME, BATCH_SEQ_NO, OPERATION, TTL, END_OF_BATCH = (
    quote_column(name) for name, _ in log.META_COLUMNS
)
META_COLUMNS: tuple[tuple[str, str], ...] = tuple(
    (quote_column(name), cql_type) for name, cql_type in log.META_COLUMNS
)

_SIMPLE_TYPES = frozenset(
    {
        "ascii", "bigint", "blob", "boolean", "date", "decimal", "double", "float", "inet",
        "int", "smallint", "text", "time", "timestamp", "timeuuid", "tinyint", "uuid",
        "varchar", "varint",
    }
)  # fmt: skip
_COLLECTION = re.compile(r"^(set|list)<\s*([a-z]+)\s*>$|^map<\s*([a-z]+)\s*,\s*([a-z]+)\s*>$")
_FROZEN = re.compile(r"^frozen<\s*(.+)\s*>$")


class InvalidTableSpec(ValueError):
    """A base table definition the emulator cannot create a CDC log for."""


def _normalize(cql_type: str) -> str:
    return re.sub(r"\s+", "", cql_type.strip().lower()).replace(",", ", ")


@dataclass(frozen=True, slots=True)
class ColumnType:
    """A parsed column type: simple, or a (frozen or not) set/list/map of simple types."""

    kind: str  # "simple", "set", "list", "map"
    args: tuple[str, ...]
    frozen: bool = False

    @classmethod
    def parse(cls, text: str) -> ColumnType:
        normalized = _normalize(text)
        frozen = False
        match = _FROZEN.match(normalized)
        if match:
            frozen, normalized = True, match.group(1)
        if normalized in _SIMPLE_TYPES:
            return cls("simple", (normalized,), frozen)
        match = _COLLECTION.match(normalized.replace(", ", ","))
        if match:
            if match.group(1):
                element = match.group(2)
                cls._check_simple(element, text)
                return cls(match.group(1), (element,), frozen)
            key, value = match.group(3), match.group(4)
            cls._check_simple(key, text)
            cls._check_simple(value, text)
            return cls("map", (key, value), frozen)
        raise InvalidTableSpec(
            f"column type {text!r} is not supported: use a simple type or set/list/map of them"
        )

    @staticmethod
    def _check_simple(name: str, text: str) -> None:
        if name not in _SIMPLE_TYPES:
            raise InvalidTableSpec(f"column type {text!r}: {name!r} is not a simple CQL type")

    @property
    def is_multi_cell(self) -> bool:
        """A non-frozen collection: CDC logs it as a delta, with deleted elements."""
        return self.kind != "simple" and not self.frozen

    def cql(self) -> str:
        if self.kind == "simple":
            inner = self.args[0]
        elif self.kind == "map":
            inner = f"map<{self.args[0]}, {self.args[1]}>"
        else:
            inner = f"{self.kind}<{self.args[0]}>"
        return f"frozen<{inner}>" if self.frozen and self.kind != "simple" else inner

    def log_cql(self) -> str:
        """The type of this column in the log table (``create_log_schema``)."""
        if not self.is_multi_cell:
            return self.cql()
        if self.kind == "list":
            return f"frozen<map<timeuuid, {self.args[0]}>>"
        return ColumnType(self.kind, self.args, frozen=True).cql()

    def deleted_elements_cql(self) -> str | None:
        """``cdc$deleted_elements_<col>``: a frozen set of the collection's keys."""
        if not self.is_multi_cell:
            return None
        key = {"set": self.args[0], "map": self.args[0], "list": "timeuuid"}[self.kind]
        return f"frozen<set<{key}>>"


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    cql_type: str

    def __post_init__(self) -> None:
        check_identifier(self.name, "column")
        if self.name.startswith("cdc"):
            raise InvalidTableSpec(f"column {self.name!r}: names starting with 'cdc' are reserved")
        ColumnType.parse(self.cql_type)

    @property
    def type(self) -> ColumnType:
        return ColumnType.parse(self.cql_type)


def deleted_column(name: str) -> str:
    """:func:`cdcgen.core.cdc_log.deleted_column`, quoted for CQL text."""
    return f'"{log.deleted_column(name)}"'


def deleted_elements_column(name: str) -> str:
    """:func:`cdcgen.core.cdc_log.deleted_elements_column`, quoted for CQL text."""
    return f'"{log.deleted_elements_column(name)}"'


@dataclass(frozen=True, slots=True)
class BaseTableSpec:
    """A CDC-enabled base table: its keys, its data columns and its CDC TTL (seconds)."""

    keyspace: str
    table: str
    partition_key: tuple[Column, ...]
    clustering_key: tuple[Column, ...] = ()
    columns: tuple[Column, ...] = ()
    cdc_ttl: int = DEFAULT_CDC_TTL

    def __post_init__(self) -> None:
        check_identifier(self.keyspace, "keyspace")
        check_identifier(self.table, "table")
        check_identifier(self.log_table, "log table")
        if not self.partition_key:
            raise InvalidTableSpec(f"table {self.table}: a partition key is required")
        names = [c.name for c in (*self.partition_key, *self.clustering_key, *self.columns)]
        if len(set(names)) != len(names):
            raise InvalidTableSpec(f"table {self.table}: duplicate column names in {names}")
        for column in (*self.partition_key, *self.clustering_key):
            if column.type.is_multi_cell:
                raise InvalidTableSpec(
                    f"key column {column.name} cannot be a non-frozen collection"
                )
        if self.cdc_ttl < 0:
            raise InvalidTableSpec(f"table {self.table}: CDC TTL must be >= 0 (0 = none)")

    @property
    def log_table(self) -> str:
        return self.table + LOG_SUFFIX

    @property
    def qualified_table(self) -> str:
        return f"{self.keyspace}.{self.table}"

    @property
    def qualified_log_table(self) -> str:
        return f"{self.keyspace}.{self.log_table}"

    @property
    def key_columns(self) -> tuple[Column, ...]:
        return (*self.partition_key, *self.clustering_key)


def orders_table(
    keyspace: str, table: str = "orders", cdc_ttl: int = DEFAULT_CDC_TTL
) -> BaseTableSpec:
    """The workload's default table: ``(pk int, ck int, v text, tags set<text>)``."""
    return BaseTableSpec(
        keyspace=keyspace,
        table=table,
        partition_key=(Column("pk", "int"),),
        clustering_key=(Column("ck", "int"),),
        columns=(Column("v", "text"), Column("tags", "set<text>")),
        cdc_ttl=cdc_ttl,
    )


def base_table_cql(spec: BaseTableSpec) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for the base table (names allow-listed)."""
    columns = ", ".join(f"{c.name} {c.type.cql()}" for c in (*spec.key_columns, *spec.columns))
    pk = ", ".join(c.name for c in spec.partition_key)
    pk = f"({pk})" if len(spec.partition_key) > 1 else pk
    key = ", ".join([pk, *(c.name for c in spec.clustering_key)])
    return f"CREATE TABLE IF NOT EXISTS {spec.qualified_table} ({columns}, PRIMARY KEY ({key}))"


def log_columns(spec: BaseTableSpec) -> list[tuple[str, str]]:
    """Every log table column as ``(quoted-or-plain name, CQL type)``, in schema order."""
    result = list(META_COLUMNS)
    for column in spec.key_columns:
        result.append((column.name, column.type.cql()))
    for column in spec.columns:
        kind = column.type
        result.append((column.name, kind.log_cql()))
        result.append((deleted_column(column.name), "boolean"))
        elements = kind.deleted_elements_cql()
        if elements is not None:
            result.append((deleted_elements_column(column.name), elements))
    return result


def twcs_window_minutes(ttl_seconds: int) -> int:
    """``ceil(ceil(ttl / 24) s)`` in minutes: at most ~24 SSTables live at once."""
    return math.ceil(math.ceil(ttl_seconds / 24) / 60)


def log_table_cql(spec: BaseTableSpec) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for ``<table>_scylla_cdc_log`` (``create_log_schema``)."""
    columns = ", ".join(f"{name} {cql_type}" for name, cql_type in log_columns(spec))
    options = [
        "caching = {'keys': 'NONE', 'rows_per_partition': 'NONE'}",
        f"comment = 'CDC log for {spec.keyspace}.{spec.table}'",
    ]
    if spec.cdc_ttl > 0:
        window_seconds = math.ceil(spec.cdc_ttl / 24)
        options.append(
            "compaction = {'class': 'TimeWindowCompactionStrategy', "
            "'compaction_window_unit': 'MINUTES', "
            f"'compaction_window_size': '{twcs_window_minutes(spec.cdc_ttl)}', "
            f"'expired_sstable_check_frequency_seconds': '{max(1, window_seconds // 2)}'}}"
        )
        options.append("gc_grace_seconds = 0")
    else:
        options.append("compaction = {'class': 'TimeWindowCompactionStrategy'}")
    return (
        f"CREATE TABLE IF NOT EXISTS {spec.qualified_log_table} ({columns}, "
        f"PRIMARY KEY ({STREAM_ID}, {TIME}, {BATCH_SEQ_NO})) WITH " + " AND ".join(options)
    )
