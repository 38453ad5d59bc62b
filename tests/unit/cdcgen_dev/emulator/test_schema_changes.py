"""Schema changes of a CDC table, the pure parts: the emulator's new definition after an
ALTER (``cdcgen_dev.emulator.schema_changes``), and which columns a replication run adds
to the sink or keeps replaying (``cdcgen.replication.sink_columns``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cdcgen.core.cdc_log import TableRef
from cdcgen.replication.sink_columns import (
    add_statement,
    columns_to_add,
    with_columns,
    with_dropped_columns,
)
from cdcgen.replication.sink_schema import SinkSchemaError, sink_shape
from cdcgen_dev.emulator.cql_types import InvalidTableSpec
from cdcgen_dev.emulator.log_schema import Column, Field, UserType, log_columns, orders_table
from cdcgen_dev.emulator.schema_changes import (
    AddColumn,
    CdcOptions,
    DropColumn,
    altered_spec,
)
from cdcgen_dev.emulator.tables import spec_from_json, spec_to_json
from unit.table_definitions import definition

SOURCE, SINK = TableRef("shop", "orders"), TableRef("shop_dr", "orders")


def test_an_added_column_gives_the_log_its_columns_and_a_drop_takes_them() -> None:
    spec = orders_table("ks")
    added = altered_spec(spec, AddColumn(Column("labels", "map<text, int>")))
    new = [c for c in log_columns(added) if c not in log_columns(spec)]
    assert new == [
        ("labels", "frozen<map<text, int>>"),
        ('"cdc$deleted_labels"', "boolean"),
        ('"cdc$deleted_elements_labels"', "frozen<set<text>>"),
    ]
    assert altered_spec(added, AddColumn(Column("labels", "map<text, int>"))) == added
    assert altered_spec(added, DropColumn("labels")) == spec
    assert altered_spec(spec, DropColumn("labels")) == spec  # dropped already


def test_alters_cql_refuses_are_refused_by_name() -> None:
    spec = orders_table("ks")
    with pytest.raises(InvalidTableSpec, match="key column pk cannot be dropped"):
        altered_spec(spec, DropColumn("pk"))
    with pytest.raises(InvalidTableSpec, match="column v exists already as text"):
        altered_spec(spec, AddColumn(Column("v", "int")))
    with pytest.raises(InvalidTableSpec, match="CDC TTL must be >= 0"):
        altered_spec(spec, CdcOptions(ttl=-1))


def test_a_non_frozen_user_type_column_is_not_dropped_in_the_sandbox() -> None:
    """Found by the torture test (seed 4153993561): Cassandra refuses to drop it ("Cannot
    drop non-frozen column c1 of user type point"), ScyllaDB does not; the sandbox says
    so by name instead of failing in the middle of an ALTER."""
    point = UserType("point", (Field("x", "double"), Field("y", "double")))
    orders = replace(orders_table("ks"), user_types=(point,))
    spec = altered_spec(orders, AddColumn(Column("where", "point")))
    with pytest.raises(InvalidTableSpec, match="cannot drop where, a non-frozen user type"):
        altered_spec(spec, DropColumn("where"))
    frozen = altered_spec(orders, AddColumn(Column("at", "frozen<point>")))
    assert altered_spec(frozen, DropColumn("at")) == orders


def test_new_cdc_options_are_kept_with_the_definition() -> None:
    spec = altered_spec(orders_table("ks"), CdcOptions(ttl=600, postimage=True))
    assert (spec.cdc_ttl, spec.preimage, spec.postimage) == (600, False, True)
    assert spec_from_json(spec_to_json(spec)) == spec


def test_a_run_adds_the_sources_new_columns_to_the_sink() -> None:
    source = definition(SOURCE, v="text", note="static text", labels="map<text, int>")
    sink = definition(SINK, v="text")
    with pytest.raises(SinkSchemaError, match=r"has no column\(s\) note, labels"):
        sink_shape(source, SINK, sink)
    names = columns_to_add(source, sink)
    assert names == ["note", "labels"]
    assert add_statement(source, sink, "note") == (
        'ALTER TABLE "shop_dr"."orders" ADD "note" text STATIC'
    )
    shape = sink_shape(source, SINK, with_columns(source, sink, names))
    assert set(shape.table.columns) == {"v", "note", "labels"}


def test_a_column_of_a_user_type_the_sink_defines_otherwise_is_not_added() -> None:
    source = definition(SOURCE, home="address")
    assert columns_to_add(source, definition(SINK)) == ["home"]
    assert columns_to_add(source, definition(SINK, udts=False)) == []


def test_a_column_dropped_on_the_source_keeps_being_replayed_while_the_lake_holds_it() -> None:
    source = definition(SOURCE, v="text")
    sink = definition(SINK, v="text", note="text")
    kept = with_dropped_columns(source, sink, {"v", "note"})
    assert sink_shape(kept, SINK, sink).table.columns.keys() == {"v", "note"}
    assert with_dropped_columns(source, sink, {"v"}) == source  # not in the lake
