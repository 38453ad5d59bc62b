"""Which changes a replication run applies, and when it refuses (pure rules)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.replication import ColumnKind
from cdcgen.core.replication_plan import (
    LakeCoverage,
    ReplicationError,
    SinkProgress,
    plan_apply,
)
from cdcgen.core.watermark import TableProgress
from cdcgen.replication.sink_schema import ParsedType, SinkSchemaError, column_kind, converter

T0 = datetime(2026, 11, 24, 6, 0, tzinfo=UTC)
SOURCE, SINK = TableRef("shop", "orders"), TableRef("shop_dr", "orders")


def progress(until: datetime | None) -> SinkProgress:
    return SinkProgress(SOURCE, SINK, consistent_until=until)


def test_a_run_applies_from_the_consistency_point_to_the_watermark() -> None:
    plan = plan_apply(
        progress(T0), LakeCoverage(T0 - timedelta(hours=1), T0 + timedelta(minutes=5), 7), {}
    )
    assert (plan.since, plan.until, plan.lake_version) == (T0, T0 + timedelta(minutes=5), 7)
    assert not plan.empty


def test_streams_an_interrupted_run_finished_start_later() -> None:
    done = {b"\x01": T0 + timedelta(minutes=5), b"\x02": T0 - timedelta(minutes=1)}
    plan = plan_apply(progress(T0), LakeCoverage(T0, T0 + timedelta(minutes=9)), done)
    assert plan.stream_since(b"\x01") == T0 + timedelta(minutes=5)
    assert plan.stream_since(b"\x02") == T0  # older than the consistency point: implied
    assert plan.stream_since(b"\x03") == T0


def test_nothing_new_is_an_empty_plan() -> None:
    plan = plan_apply(progress(T0), LakeCoverage(T0, T0 - timedelta(seconds=1)), {})
    assert plan.empty and plan.until == T0


def test_a_sink_never_bootstrapped_is_refused_with_the_command() -> None:
    command = "cdcgen replication bootstrap --table shop.orders --sink-table shop_dr.orders"
    with pytest.raises(ReplicationError, match=re.escape(command)):
        plan_apply(progress(None), LakeCoverage(T0, T0), {})


def test_a_sink_behind_what_the_lake_holds_must_be_re_bootstrapped() -> None:
    with pytest.raises(ReplicationError) as failure:
        plan_apply(
            progress(T0), LakeCoverage(T0 + timedelta(seconds=1), T0 + timedelta(hours=1)), {}
        )
    assert "--replace" in str(failure.value) and "TTL" in str(failure.value)


def test_an_empty_lake_is_refused() -> None:
    with pytest.raises(ReplicationError, match="cdc_changes"):
        plan_apply(progress(T0), LakeCoverage(None, None), {})


def test_a_changes_re_bootstrap_moves_where_the_lake_is_complete() -> None:
    table = TableProgress(SOURCE, T0, T0 + timedelta(hours=2), None, "", 3, T0 + timedelta(hours=1))
    assert table.complete_since == T0 + timedelta(hours=1)
    assert TableProgress(SOURCE, T0, None, None, "").complete_since == T0


@pytest.mark.parametrize(
    ("cql", "kind"),
    [("int", ColumnKind.ATOMIC), ("set<text>", ColumnKind.SET), ("map<text, int>", ColumnKind.MAP),
     ("list<int>", ColumnKind.LIST), ("frozen<set<text>>", ColumnKind.ATOMIC)],
)  # fmt: skip
def test_non_frozen_collections_are_replayed_by_element(cql: str, kind: ColumnKind) -> None:
    assert column_kind(ParsedType.parse(cql)) is kind


def test_lake_values_become_what_the_driver_binds() -> None:
    import uuid
    from decimal import Decimal

    value = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
    assert converter(ParsedType.parse("uuid"), "c")(value) == uuid.UUID(value)
    assert converter(ParsedType.parse("decimal"), "c")("1.50") == Decimal("1.50")
    assert converter(ParsedType.parse("set<uuid>"), "c")([value]) == {uuid.UUID(value)}
    assert converter(ParsedType.parse("map<text, varint>"), "c")([("a", "12")]) == {"a": 12}
    assert converter(ParsedType.parse("frozen<list<int>>"), "c")([1, 2]) == [1, 2]


def test_types_the_lake_keeps_as_opaque_text_are_refused_by_name() -> None:
    with pytest.raises(SinkSchemaError, match="column where"):
        converter(ParsedType.parse("frozen<tuple<int, text>>"), "where")
    with pytest.raises(SinkSchemaError):
        ParsedType.parse("map<text")
