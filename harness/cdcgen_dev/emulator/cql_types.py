"""CQL column types as a table spec spells them: parsed, checked against CQL, printed.

Every type a CDC table may have: the native types, ``set``/``list``/``map`` (frozen or
not), ``tuple`` (always frozen) and user-defined types (frozen or not), nested. The rules
are the ones CQL itself applies, so a spec the emulator accepts is one Cassandra and
ScyllaDB accept:

* a collection or user type inside another type (an element, a key, a tuple component,
  a field) must be written ``frozen<...>``: CQL has no non-frozen nesting;
* a ``duration`` cannot be a set element or a map key, however deep (durations have no
  order), nor part of a primary key (:mod:`.log_schema` checks keys);
* ``counter`` columns are refused: ScyllaDB refuses CDC on a table with counters
  (``test/cql/cdc_disallow_cdc_for_counters_test``);
* ``frozen<>`` only wraps collections, tuples and user types.

A user type is referred to by name (``address``, ``frozen<address>``); its fields are
declared once, in the table spec (:class:`UserType`), which resolves the names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from cdcgen.core.identifiers import check_identifier

NATIVE_TYPES = frozenset(
    {
        "ascii", "bigint", "blob", "boolean", "date", "decimal", "double", "duration",
        "float", "inet", "int", "smallint", "text", "time", "timestamp", "timeuuid",
        "tinyint", "uuid", "varchar", "varint",
    }
)  # fmt: skip
#: Other names of the same type: ``varchar`` is ``text`` (what ``system_schema`` says).
_ALIASES = {"varchar": "text"}
#: Names a user type cannot take: they are CQL's own type names.
_RESERVED = NATIVE_TYPES | {"counter", "frozen", "list", "map", "set", "tuple", "vector"}
_TOKENS = re.compile(r"\s*([<>,])\s*")


class InvalidTableSpec(ValueError):
    """A base table definition the emulator cannot create a CDC log for."""


class TypeKind(StrEnum):
    NATIVE = "native"
    SET = "set"
    LIST = "list"
    MAP = "map"
    TUPLE = "tuple"
    UDT = "udt"


_COLLECTIONS = (TypeKind.SET, TypeKind.LIST, TypeKind.MAP)
_ARITY = {TypeKind.SET: 1, TypeKind.LIST: 1, TypeKind.MAP: 2}


@dataclass(frozen=True, slots=True)
class ColumnType:
    """A parsed CQL type. ``name`` is the native type's or the user type's name (the
    kind's own for collections and tuples); ``args`` the element, key and value, or
    tuple component types."""

    kind: TypeKind
    name: str
    args: tuple[ColumnType, ...] = ()
    frozen: bool = False

    @classmethod
    def parse(cls, text: str) -> ColumnType:
        return parse_type(text)

    @property
    def is_multi_cell(self) -> bool:
        """A non-frozen collection or user type: one cell per element or field, which
        CDC logs as a delta (added cells, deleted elements, a tombstone)."""
        return self.kind in (*_COLLECTIONS, TypeKind.UDT) and not self.frozen

    @property
    def is_collection(self) -> bool:
        return self.kind in _COLLECTIONS

    def walk(self) -> Iterator[ColumnType]:
        """This type and every type inside it."""
        yield self
        for arg in self.args:
            yield from arg.walk()

    def user_types(self) -> set[str]:
        """The user types this type refers to (not those inside their fields)."""
        return {t.name for t in self.walk() if t.kind is TypeKind.UDT}

    def references_duration(self, fields: dict[str, tuple[ColumnType, ...]]) -> bool:
        """Whether a ``duration`` is in it, looking into user types' ``fields``."""
        for inner in self.walk():
            if inner.kind is TypeKind.NATIVE and inner.name == "duration":
                return True
            nested = fields.get(inner.name, ()) if inner.kind is TypeKind.UDT else ()
            if any(f.references_duration(fields) for f in nested):
                return True
        return False

    def unordered_durations(self, fields: dict[str, tuple[ColumnType, ...]]) -> bool:
        """Whether a set element or a map key in it holds a ``duration`` (CQL refuses
        them: durations have no order), looking into user types' ``fields``."""
        return any(
            inner.kind in (TypeKind.SET, TypeKind.MAP) and inner.args[0].references_duration(fields)
            for inner in self.walk()
        )

    def cql(self) -> str:
        """The type in CQL text (frozen where it is; a tuple always)."""
        if self.kind in (TypeKind.NATIVE, TypeKind.UDT):
            inner = self.name
        else:
            inner = f"{self.name}<{', '.join(a.cql() for a in self.args)}>"
        if self.frozen and self.kind is not TypeKind.NATIVE:
            return f"frozen<{inner}>"
        return inner

    def frozen_copy(self) -> ColumnType:
        return ColumnType(self.kind, self.name, self.args, frozen=True)

    def log_cql(self) -> str:
        """The column's type in the log table (``add_columns_to_cdc_log`` in
        ``cdc/log.cc``): a non-frozen list is ``frozen<map<timeuuid, T>>`` (its cells are
        keyed by time UUIDs), any other non-frozen collection or user type is frozen."""
        if not self.is_multi_cell:
            return self.cql()
        if self.kind is TypeKind.LIST:
            return f"frozen<map<timeuuid, {self.args[0].cql()}>>"
        return self.frozen_copy().cql()

    def deleted_elements_cql(self) -> str | None:
        """``cdc$deleted_elements_<col>`` of a non-frozen column: a frozen set of its
        collection's keys (a set's elements, a map's keys, a list's time UUIDs) or, for
        a user type, of the ``smallint`` indices of its fields set to null."""
        if not self.is_multi_cell:
            return None
        key = {
            TypeKind.SET: lambda: self.args[0].cql(),
            TypeKind.MAP: lambda: self.args[0].cql(),
            TypeKind.LIST: lambda: "timeuuid",
            TypeKind.UDT: lambda: "smallint",
        }[self.kind]()
        return f"frozen<set<{key}>>"


@lru_cache(maxsize=1024)
def parse_type(text: str) -> ColumnType:
    """Parse and check one CQL type (cached: writes ask for the same few)."""
    tokens = [t for t in _TOKENS.split(text.strip().lower()) if t]
    parsed, rest = _parse(tokens, text, nested=False)
    if rest:
        raise InvalidTableSpec(f"column type {text!r}: unexpected {''.join(rest)!r}")
    return parsed


def _parse(tokens: list[str], text: str, *, nested: bool) -> tuple[ColumnType, list[str]]:
    if not tokens or tokens[0] in "<>,":
        raise InvalidTableSpec(f"column type {text!r} is not a CQL type")
    name, rest = tokens[0], tokens[1:]
    if name == "counter":
        raise InvalidTableSpec(
            f"column type {text!r}: ScyllaDB refuses CDC on tables with counters"
        )
    if name == "vector":
        raise InvalidTableSpec(f"column type {text!r}: {name} is not supported")
    args: list[ColumnType] = []
    if rest and rest[0] == "<":
        rest = rest[1:]
        while True:
            # What frozen<> wraps is checked once frozen; anything else's args are nested.
            arg, rest = _parse(rest, text, nested=name != "frozen")
            args.append(arg)
            if rest[:1] == [","]:
                rest = rest[1:]
            elif rest[:1] == [">"]:
                rest = rest[1:]
                break
            else:
                raise InvalidTableSpec(f"column type {text!r}: unbalanced '<' or ','")
    if name == "frozen":
        if len(args) != 1 or args[0].kind is TypeKind.NATIVE:
            raise InvalidTableSpec(
                f"column type {text!r}: frozen<> takes one collection, tuple or user type"
            )
        return args[0].frozen_copy(), rest
    kind = _kind(name, args, text)
    name = _ALIASES.get(name, name)
    parsed = ColumnType(kind, name, tuple(args), frozen=kind is TypeKind.TUPLE)
    if nested and parsed.is_multi_cell:
        raise InvalidTableSpec(
            f"column type {text!r}: {parsed.cql()} inside another type must be frozen<...>"
        )
    # No user type's fields are known here; the table spec looks into them.
    if kind in (TypeKind.SET, TypeKind.MAP) and parsed.unordered_durations({}):
        raise InvalidTableSpec(
            f"column type {text!r}: durations cannot be set elements or map keys"
        )
    return parsed, rest


def _kind(name: str, args: list[ColumnType], text: str) -> TypeKind:
    if name in ("set", "list", "map"):
        kind = TypeKind(name)
        if len(args) != _ARITY[kind]:
            raise InvalidTableSpec(f"column type {text!r}: {name} takes {_ARITY[kind]} type(s)")
        return kind
    if name == "tuple":
        if not args:
            raise InvalidTableSpec(f"column type {text!r}: a tuple needs a component")
        return TypeKind.TUPLE
    if name in _RESERVED - NATIVE_TYPES:
        raise InvalidTableSpec(f"column type {text!r}: {name} is not supported")
    if args:
        raise InvalidTableSpec(f"column type {text!r}: {name} takes no type parameters")
    if name in NATIVE_TYPES:
        return TypeKind.NATIVE
    try:
        check_identifier(name, "user type")
    except ValueError as exc:
        raise InvalidTableSpec(f"column type {text!r}: {exc}") from None
    return TypeKind.UDT


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a user type."""

    name: str
    cql_type: str

    @property
    def type(self) -> ColumnType:
        return parse_type(self.cql_type)


@dataclass(frozen=True, slots=True)
class UserType:
    """A user-defined type, created in the table's keyspace before the table.

    Its fields are nested types: a collection or user type among them is frozen (CQL
    refuses a non-frozen UDT whose fields hold non-frozen collections).
    """

    name: str
    fields: tuple[Field, ...]

    def __post_init__(self) -> None:
        check_identifier(self.name, "user type")
        if self.name in _RESERVED:
            raise InvalidTableSpec(f"user type {self.name!r}: a CQL type name is reserved")
        if not self.fields:
            raise InvalidTableSpec(f"user type {self.name}: it needs a field")
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise InvalidTableSpec(f"user type {self.name}: duplicate fields in {names}")
        for field in self.fields:
            check_identifier(field.name, "field")
            if field.type.is_multi_cell:
                raise InvalidTableSpec(
                    f"user type {self.name}: field {field.name} must be frozen<{field.cql_type}>"
                )

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @property
    def field_types(self) -> tuple[ColumnType, ...]:
        return tuple(f.type for f in self.fields)

    def index(self, field: str) -> int:
        """The field's position: what ``cdc$deleted_elements_<col>`` records."""
        try:
            return self.field_names.index(field)
        except ValueError:
            raise InvalidTableSpec(f"user type {self.name} has no field {field!r}") from None

    def create_cql(self, keyspace: str) -> str:
        fields = ", ".join(f"{f.name} {f.type.cql()}" for f in self.fields)
        return f"CREATE TYPE IF NOT EXISTS {keyspace}.{self.name} ({fields})"
