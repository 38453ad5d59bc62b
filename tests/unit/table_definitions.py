"""Sink and source table definitions the replication unit tests build by hand: a table
``(pk int, ck int, ...)`` with the driver's type classes, as a prepared statement's
metadata has them, so the tests need no cluster."""

from __future__ import annotations

from typing import Any

from cassandra import cqltypes

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.cql_types import ParsedType
from cdcgen.core.table_definition import TableDefinition

ADDRESS = (("street", "text"), ("zip", "int"))
#: The driver's classes of the CQL names these tests use.
NATIVE = {
    "int": "Int32Type", "text": "UTF8Type", "uuid": "UUIDType", "varint": "IntegerType",
    "duration": "DurationType",
}  # fmt: skip


def driver_type(text: str) -> Any:
    """The driver's type class of a CQL type, as a prepared statement's metadata has it."""
    kind = ParsedType.parse(text)

    def build(kind: ParsedType) -> Any:
        if kind.name == "address":
            fields = [build(ParsedType.parse(t)) for _, t in ADDRESS]
            return cqltypes.UserType.make_udt_class("shop", "address", ("street", "zip"), fields)
        if kind.name == "tuple":
            return cqltypes.TupleType.apply_parameters([build(a) for a in kind.args])
        if kind.args:
            outer = {"set": "SetType", "list": "ListType", "map": "MapType"}[kind.name]
            return cqltypes.lookup_casstype(outer).apply_parameters([build(a) for a in kind.args])
        return cqltypes.lookup_casstype(NATIVE[kind.name])

    return build(kind)


def definition(ref: TableRef, udts: bool = True, **types: str) -> TableDefinition:
    """A table ``(pk int, ck int, ...)``; a type ``static T`` makes a static column; with
    ``udts`` its keyspace defines the user type ``address``."""
    static = frozenset(n for n, t in types.items() if t.startswith("static "))
    plain = {"pk": "int", "ck": "int", **{n: t.removeprefix("static ") for n, t in types.items()}}
    drivers = {name: driver_type(text) for name, text in plain.items()}
    user_types = {"address": ADDRESS} if udts else {}
    return TableDefinition(ref, ("pk",), ("ck",), plain, static, user_types, drivers)
