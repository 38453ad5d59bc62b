"""Schema changes of a CDC table in the sandbox, the pure part: the emulator's new
definition after an ALTER (``cdcgen_dev.emulator.schema_changes``). Which columns a
replication run then adds to the sink or keeps replaying is
``tests/unit/replication/test_sink_columns.py``."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cdcgen_dev.emulator.cql_types import InvalidTableSpec
from cdcgen_dev.emulator.log_schema import Column, Field, UserType, log_columns, orders_table
from cdcgen_dev.emulator.schema_changes import (
    AddColumn,
    CdcOptions,
    DropColumn,
    altered_spec,
)
from cdcgen_dev.emulator.tables import spec_from_json, spec_to_json


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
