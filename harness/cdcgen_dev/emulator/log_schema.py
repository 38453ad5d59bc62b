"""A CDC-enabled base table and its ``<table>_scylla_cdc_log``, with ScyllaDB's exact schema.

``create_log_schema`` and ``add_columns_to_cdc_log`` in ScyllaDB's ``cdc/log.cc`` decide
the log table's shape:

* ``"cdc$stream_id" blob`` (partition key), ``"cdc$time" timeuuid`` and
  ``"cdc$batch_seq_no" int`` (clustering), then ``"cdc$operation" tinyint``,
  ``"cdc$ttl" bigint``, ``"cdc$end_of_batch" boolean``;
* the base partition and clustering key columns as regular columns, same names and types;
* every static, then every regular base column (a static column is an ordinary column of
  the log), plus ``"cdc$deleted_<col>" boolean``; a non-frozen collection or user type is
  stored frozen (a non-frozen ``list<T>`` as ``frozen<map<timeuuid, T>>``) and gets
  ``"cdc$deleted_elements_<col>"``: a frozen set of its collection's keys (``timeuuid``
  for lists) or, for a user type, of the ``smallint`` indices of its fields set to null;
  frozen types and tuples are stored as they are;
* options: TimeWindowCompactionStrategy with a window of ``ceil(ttl / 24)`` seconds
  rounded up to minutes, ``gc_grace_seconds = 0`` when the TTL is positive, caching off,
  comment ``CDC log for <ks>.<table>``.

Column types are parsed and checked by :mod:`.cql_types`; user types are declared in the
spec and created in the keyspace before the table.

The CDC TTL itself is not a table option in ScyllaDB (it is the base table's ``cdc``
option): log rows are written ``USING TTL``. Cassandra has no such option, so the emulator
records it in its own table (:mod:`cdcgen_dev.emulator.state`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cdcgen.core import cdc_log as log
from cdcgen.core.cdc_log import LOG_SUFFIX, quote_column
from cdcgen.core.identifiers import check_identifier
from cdcgen_dev.emulator.cql_types import (
    ColumnType,
    Field,
    InvalidTableSpec,
    TypeKind,
    UserType,
)

__all__ = [
    "BaseTableSpec",
    "Column",
    "ColumnType",
    "Field",
    "InvalidTableSpec",
    "TypeKind",
    "UserType",
    "base_table_cql",
    "every_shape_table",
    "log_columns",
    "log_table_cql",
    "log_table_options",
    "orders_table",
    "user_type_cql",
]

DEFAULT_CDC_TTL = 86_400
#: A table's ``gc_grace_seconds`` unless set: the log's when its CDC TTL is 0 (none).
DEFAULT_GC_GRACE_SECONDS = 864_000

# The metadata columns as they appear in CQL text (quoted: ``$`` needs it).
STREAM_ID, TIME, BATCH_SEQ_NO, OPERATION, TTL, END_OF_BATCH = (
    quote_column(name) for name, _ in log.META_COLUMNS
)
META_COLUMNS: tuple[tuple[str, str], ...] = tuple(
    (quote_column(name), cql_type) for name, cql_type in log.META_COLUMNS
)


@dataclass(frozen=True, slots=True)
class Column:
    """A base table column; ``static`` only beside a clustering key (one value per
    partition, logged in a row of its own)."""

    name: str
    cql_type: str
    static: bool = False

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
    """A CDC-enabled base table: its keys, its data columns (static and regular), its CDC
    TTL (seconds) and the user types its columns use, in creation order."""

    keyspace: str
    table: str
    partition_key: tuple[Column, ...]
    clustering_key: tuple[Column, ...] = ()
    columns: tuple[Column, ...] = ()
    cdc_ttl: int = DEFAULT_CDC_TTL
    user_types: tuple[UserType, ...] = ()
    #: The ``preimage`` and ``postimage`` CDC options, as recorded; the emulator writes
    #: no image rows.
    preimage: bool = False
    postimage: bool = False

    def __post_init__(self) -> None:
        check_identifier(self.keyspace, "keyspace")
        check_identifier(self.table, "table")
        check_identifier(self.log_table, "log table")
        if not self.partition_key:
            raise InvalidTableSpec(f"table {self.table}: a partition key is required")
        names = [c.name for c in (*self.partition_key, *self.clustering_key, *self.columns)]
        if len(set(names)) != len(names):
            raise InvalidTableSpec(f"table {self.table}: duplicate column names in {names}")
        self._check_user_types()
        fields = {t.name: t.field_types for t in self.user_types}
        for column in self.key_columns:
            kind = column.type
            if kind.is_multi_cell:
                raise InvalidTableSpec(
                    f"key column {column.name} cannot be a non-frozen collection or user type"
                )
            if kind.references_duration(fields):
                raise InvalidTableSpec(f"key column {column.name} cannot hold a duration")
            if column.static:
                raise InvalidTableSpec(f"key column {column.name} cannot be static")
        typed = [(c.name, c.type) for c in self.columns]
        typed += [(f"{t.name}.{f.name}", f.type) for t in self.user_types for f in t.fields]
        for name, kind in typed:
            if kind.unordered_durations(fields):
                raise InvalidTableSpec(f"{name}: durations cannot be set elements or map keys")
        if self.static_columns and not self.clustering_key:
            raise InvalidTableSpec(
                f"table {self.table}: static columns need a clustering key (CQL refuses them)"
            )
        if self.cdc_ttl < 0:
            raise InvalidTableSpec(f"table {self.table}: CDC TTL must be >= 0 (0 = none)")

    def _check_user_types(self) -> None:
        """Every user type a column names is declared, each after the types it uses
        (the order they are created in), once."""
        declared: set[str] = set()
        for user_type in self.user_types:
            if user_type.name in declared:
                raise InvalidTableSpec(f"table {self.table}: user type {user_type.name} twice")
            for field in user_type.fields:
                missing = field.type.user_types() - declared
                if missing:
                    raise InvalidTableSpec(
                        f"user type {user_type.name}: field {field.name} uses "
                        f"{sorted(missing)}, which must be declared before it"
                    )
            declared.add(user_type.name)
        for column in (*self.key_columns, *self.columns):
            missing = column.type.user_types() - declared
            if missing:
                raise InvalidTableSpec(
                    f"column {column.name}: user type(s) {sorted(missing)} not declared"
                )

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

    @property
    def static_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.static)

    @property
    def regular_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if not c.static)

    def user_type(self, name: str) -> UserType:
        for user_type in self.user_types:
            if user_type.name == name:
                return user_type
        raise InvalidTableSpec(f"table {self.table}: no user type {name!r}")


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


#: The native types the every-shape table has one column of each (``n_<type>``).
EVERY_NATIVE_TYPE = (
    "ascii", "bigint", "blob", "boolean", "date", "decimal", "double", "duration", "float",
    "inet", "int", "smallint", "text", "time", "timestamp", "timeuuid", "tinyint", "uuid",
    "varchar", "varint",
)  # fmt: skip


def every_shape_table(
    keyspace: str, table: str = "every_shape", cdc_ttl: int = DEFAULT_CDC_TTL
) -> BaseTableSpec:
    """A table with every column shape ScyllaDB's CDC log records differently.

    Static columns (a value, a non-frozen set, a non-frozen user type); one column of
    each native type (``n_blob`` holds a few KB); non-frozen set, map (of frozen user
    types), list (of tuples) and user type; frozen list (of frozen sets), set, map (of
    frozen lists) and user type; a tuple holding a frozen user type. The user types nest:
    ``address`` holds a frozen set and a frozen ``point``.
    """
    point = UserType("point", (Field("x", "double"), Field("y", "double")))
    address = UserType(
        "address",
        (
            Field("street", "text"),
            Field("number", "int"),
            Field("tags", "frozen<set<text>>"),
            Field("location", "frozen<point>"),
        ),
    )
    statics = (
        Column("s_note", "text", static=True),
        Column("s_tags", "set<text>", static=True),
        Column("s_home", "address", static=True),
    )
    natives = tuple(Column(f"n_{name}", name) for name in EVERY_NATIVE_TYPE)
    shapes = (
        Column("nf_set", "set<int>"),
        Column("nf_map", "map<text, frozen<address>>"),
        Column("nf_list", "list<frozen<tuple<int, text>>>"),
        Column("nf_udt", "address"),
        Column("f_list", "frozen<list<frozen<set<int>>>>"),
        Column("f_set", "frozen<set<uuid>>"),
        Column("f_map", "frozen<map<int, frozen<list<text>>>>"),
        Column("f_udt", "frozen<address>"),
        Column("tup", "tuple<int, text, frozen<point>>"),
    )
    return BaseTableSpec(
        keyspace=keyspace,
        table=table,
        partition_key=(Column("pk", "int"),),
        clustering_key=(Column("ck", "int"),),
        columns=(*statics, *natives, *shapes),
        cdc_ttl=cdc_ttl,
        user_types=(point, address),
    )


def user_type_cql(spec: BaseTableSpec) -> list[str]:
    """``CREATE TYPE IF NOT EXISTS`` for each user type, in the order they must be made."""
    return [user_type.create_cql(spec.keyspace) for user_type in spec.user_types]


def base_table_cql(spec: BaseTableSpec) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for the base table (names allow-listed)."""
    columns = ", ".join(
        f"{c.name} {c.type.cql()}{' STATIC' if c.static else ''}"
        for c in (*spec.key_columns, *spec.columns)
    )
    pk = ", ".join(c.name for c in spec.partition_key)
    pk = f"({pk})" if len(spec.partition_key) > 1 else pk
    key = ", ".join([pk, *(c.name for c in spec.clustering_key)])
    return f"CREATE TABLE IF NOT EXISTS {spec.qualified_table} ({columns}, PRIMARY KEY ({key}))"


def log_columns(spec: BaseTableSpec) -> list[tuple[str, str]]:
    """Every log table column as ``(quoted-or-plain name, CQL type)``, in schema order:
    metadata, keys, static columns, regular columns (``add_columns_to_cdc_log``)."""
    result = list(META_COLUMNS)
    for column in spec.key_columns:
        result.append((column.name, column.type.cql()))
    for column in (*spec.static_columns, *spec.regular_columns):
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


def log_table_options(spec: BaseTableSpec) -> list[str]:
    """The log's table options ``create_log_schema`` derives from the base table: the
    TTL's TWCS window and ``gc_grace_seconds``, caching off, the comment."""
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
        options.append(f"gc_grace_seconds = {DEFAULT_GC_GRACE_SECONDS}")
    return options


def log_table_cql(spec: BaseTableSpec) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for ``<table>_scylla_cdc_log`` (``create_log_schema``)."""
    columns = ", ".join(f"{name} {cql_type}" for name, cql_type in log_columns(spec))
    return (
        f"CREATE TABLE IF NOT EXISTS {spec.qualified_log_table} ({columns}, "
        f"PRIMARY KEY ({STREAM_ID}, {TIME}, {BATCH_SEQ_NO})) WITH "
        + " AND ".join(log_table_options(spec))
    )
