"""The sink table checked against the source's, and lake values as the driver binds them
(``cdcgen.replication.sink_schema``): every column shape either has a converter and a
replay kind, or is refused by name before any change is applied."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from cassandra.util import Duration

from cdcgen.changes.codec import batch_of_columns
from cdcgen.core.cdc_log import TableRef, deleted_elements_column
from cdcgen.core.cql_types import ParsedType
from cdcgen.core.errors import CqlTypeError
from cdcgen.core.operations.table import ColumnKind
from cdcgen.core.table_definition import TableDefinition
from cdcgen.replication.errors import SinkSchemaError
from cdcgen.replication.sink_schema import SinkShape, column_kind, sink_shape
from unit.table_definitions import ADDRESS, definition

SOURCE, SINK = TableRef("shop", "orders"), TableRef("shop_dr", "orders")


def driver_row(shape: SinkShape, lake: dict[str, object]) -> dict[str, object]:
    """One lake row through the shape's decoders, as the apply's change batch holds it."""
    batch = batch_of_columns({name: [value] for name, value in lake.items()}, shape.decoders, 1)
    removed = {deleted_elements_column(n): v[0] for n, v in batch.deleted_elements.items()}
    return {**{name: values[0] for name, values in batch.cells.items()}, **removed}


@pytest.mark.parametrize(
    ("cql", "kind"),
    [("int", ColumnKind.ATOMIC), ("set<text>", ColumnKind.SET), ("map<text, int>", ColumnKind.MAP),
     ("frozen<set<text>>", ColumnKind.ATOMIC), ("frozen<list<int>>", ColumnKind.ATOMIC),
     ("address", ColumnKind.UDT), ("frozen<address>", ColumnKind.ATOMIC),
     ("frozen<tuple<int, text>>", ColumnKind.ATOMIC), ("duration", ColumnKind.ATOMIC)],
)  # fmt: skip
def test_each_shape_has_its_replay_kind(cql: str, kind: ColumnKind) -> None:
    udts = {"address": tuple((f, ParsedType.parse(t)) for f, t in ADDRESS)}
    assert column_kind(ParsedType.parse(cql), "c", udts) is kind


def test_non_frozen_lists_and_counters_are_refused_by_name() -> None:
    with pytest.raises(SinkSchemaError, match="column lines is a non-frozen list"):
        column_kind(ParsedType.parse("list<int>"), "lines")
    with pytest.raises(SinkSchemaError, match="column hits is a counter"):
        column_kind(ParsedType.parse("counter"), "hits")


def test_types_the_lake_keeps_as_opaque_text_are_refused_by_name() -> None:
    with pytest.raises(SinkSchemaError, match="column emb of type vector"):
        column_kind(ParsedType.parse("vector<float, 3>"), "emb")
    with pytest.raises(SinkSchemaError, match="column embs of type map"):
        column_kind(ParsedType.parse("map<int, frozen<vector<float, 3>>>"), "embs")
    with pytest.raises(CqlTypeError, match="map<text"):
        ParsedType.parse("map<text")


def test_lake_values_become_what_the_driver_binds() -> None:
    value = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
    source = definition(
        SOURCE, u="uuid", ids="set<uuid>", n="map<text, varint>", pair="frozen<tuple<int, uuid>>",
        home="address", homes="map<text, frozen<address>>", d="duration",
    )  # fmt: skip
    shape = sink_shape(source, SINK, definition(SINK, **{
        k: v for k, v in source.types.items() if k not in ("pk", "ck")}))  # fmt: skip
    row = driver_row(
        shape,
        {"u": value, "ids": [value], "n": [("a", "12")], "pair": {"f0": 1, "f1": value},
         "home": {"street": "Main", "zip": None}, "homes": [("h", {"street": "Elm", "zip": 7})],
         "d": {"months": 1, "days": 2, "nanoseconds": 3}, "cdc$deleted_elements_ids": [value],
         "cdc$deleted_elements_home": [1]}
    )  # fmt: skip
    assert row["u"] == uuid.UUID(value) and row["ids"] == {uuid.UUID(value)}
    assert row["n"] == {"a": 12} and row["pair"] == (1, uuid.UUID(value))
    assert row["home"] == ("Main", None) and row["homes"] == {"h": ("Elm", 7)}
    assert row["d"] == Duration(1, 2, 3)
    assert row["cdc$deleted_elements_ids"] == {uuid.UUID(value)}
    assert row["cdc$deleted_elements_home"] == {1}


def test_a_shape_knows_statics_udt_fields_and_removed_elements() -> None:
    source = definition(SOURCE, v="text", note="static text", home="address", tags="set<int>")
    sink = definition(SINK, v="text", note="static text", home="address", tags="set<int>")
    shape = sink_shape(source, SINK, sink)
    table = shape.table
    assert (table.keyspace, table.static, table.fields) == (
        "shop_dr", frozenset({"note"}), {"home": ("street", "zip")},
    )  # fmt: skip
    row = driver_row(
        shape,
        {"home": {"street": "x", "zip": 1}, "cdc$deleted_elements_home": [1],
         "cdc$deleted_elements_tags": [5]}
    )  # fmt: skip
    assert row["home"] == ("x", 1) and row["cdc$deleted_elements_home"] == {1}
    assert row["cdc$deleted_elements_tags"] == {5}


@pytest.mark.parametrize(
    ("sink", "message"),
    [
        ({"v": "int"}, r"column\(s\) differ: v int \(source: text\)"),
        ({"v": "static text"}, "v static on one side only"),
        ({}, r"has no column\(s\) v of the source"),
    ],
)
def test_a_sink_of_another_shape_is_refused_by_name(sink: dict[str, str], message: str) -> None:
    with pytest.raises(SinkSchemaError, match=message):
        sink_shape(definition(SOURCE, v="text"), SINK, definition(SINK, **sink))


def test_a_missing_sink_a_different_key_or_user_type_is_refused() -> None:
    source = definition(SOURCE, home="address")
    with pytest.raises(SinkSchemaError, match=r"shop_dr\.orders does not exist"):
        sink_shape(source, SINK, None)
    other_key = TableDefinition(SINK, ("pk",), (), source.types, cqltypes=source.cqltypes)
    with pytest.raises(SinkSchemaError, match="primary key"):
        sink_shape(source, SINK, other_key)
    changed = TableDefinition(
        SINK, ("pk",), ("ck",), source.types, user_types={"address": (("street", "text"),)},
    )  # fmt: skip
    with pytest.raises(SinkSchemaError, match="user type address differs"):
        sink_shape(source, SINK, changed)


def test_a_column_an_older_lake_kept_as_text_is_refused_before_any_change() -> None:
    source = definition(SOURCE, home="frozen<address>", pairs="map<text, frozen<tuple<int>>>")
    sink = definition(SINK, home="frozen<address>", pairs="map<text, frozen<tuple<int>>>")
    struct = pa.struct([("street", pa.string()), ("zip", pa.int32())])
    pairs = pa.map_(pa.string(), pa.struct([("f0", pa.int32())]))
    assert sink_shape(source, SINK, sink, {"home": struct, "pairs": pairs}).table
    with pytest.raises(SinkSchemaError, match=r"keeps column\(s\) home of shop.orders as text"):
        sink_shape(source, SINK, sink, {"home": pa.string(), "pairs": pairs})
    with pytest.raises(SinkSchemaError, match=r"column\(s\) pairs"):
        sink_shape(source, SINK, sink, {"home": struct, "pairs": pa.map_(pa.string(), pa.string())})


def test_a_sink_of_another_clustering_order_or_default_ttl_is_refused() -> None:
    from dataclasses import replace

    source = replace(definition(SOURCE, v="text"), descending=frozenset({"ck"}))
    assert sink_shape(source, SINK, replace(source, ref=SINK)).table.descending == {"ck"}
    with pytest.raises(SinkSchemaError, match="clustering order differs"):
        sink_shape(source, SINK, replace(source, ref=SINK, descending=frozenset()))
    with pytest.raises(SinkSchemaError, match="default_time_to_live 3600 differs"):
        sink_shape(source, SINK, replace(source, ref=SINK, default_ttl=3600))
