"""Schema changes of a CDC table, the pure part on the sink's side: which columns a
replication run adds to the sink or keeps replaying (``cdcgen.replication.sink_columns``).
The emulator's new definition after an ALTER is
``tests/unit/cdcgen_dev/emulator/test_schema_changes.py``."""

from __future__ import annotations

import pytest

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.table_definition import add_column_cql
from cdcgen.replication.errors import SinkSchemaError
from cdcgen.replication.sink_columns import (
    columns_to_add,
    with_columns,
    with_dropped_columns,
)
from cdcgen.replication.sink_schema import sink_shape
from unit.table_definitions import definition

SOURCE, SINK = TableRef("shop", "orders"), TableRef("shop_dr", "orders")


def test_a_run_adds_the_sources_new_columns_to_the_sink() -> None:
    source = definition(SOURCE, v="text", note="static text", labels="map<text, int>")
    sink = definition(SINK, v="text")
    with pytest.raises(SinkSchemaError, match=r"has no column\(s\) note, labels"):
        sink_shape(source, SINK, sink)
    names = columns_to_add(source, sink)
    assert names == ["note", "labels"]
    assert add_column_cql(sink.ref, "note", source.types["note"], "note" in source.static) == (
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
