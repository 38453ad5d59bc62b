"""Which changes a replication run applies, and when it refuses (pure rules)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.clocks import NodeClock
from cdcgen.core.errors import ReplicationError, SnapshotClockUnreadable
from cdcgen.core.replication_plan import LakeCoverage, SinkProgress, plan_apply, snapshot_time
from cdcgen.core.watermark import TableProgress

T0 = datetime(2026, 11, 24, 6, 0, tzinfo=UTC)
SOURCE, SINK = TableRef("shop", "orders"), TableRef("shop_dr", "orders")


def progress(until: datetime | None) -> SinkProgress:
    return SinkProgress(SOURCE, SINK, consistent_until=until)


def test_a_run_applies_from_the_consistency_point_to_the_watermark() -> None:
    plan = plan_apply(
        progress(T0), LakeCoverage(T0 - timedelta(hours=1), T0 + timedelta(minutes=5), 7)
    )
    assert (plan.since, plan.until, plan.lake_version) == (T0, T0 + timedelta(minutes=5), 7)
    assert not plan.empty


def test_the_snapshot_time_is_the_earliest_node_clock_less_the_windows() -> None:
    clocks = [NodeClock("a", T0 + timedelta(seconds=20)), NodeClock("b", T0)]
    at = snapshot_time(clocks, timedelta(seconds=30), timedelta(seconds=5))
    assert at == T0 - timedelta(seconds=35)  # node b's clock, not the later one's


def test_no_snapshot_time_without_every_clock() -> None:
    clocks = [NodeClock("a", T0), NodeClock("b", None, "timed out")]
    with pytest.raises(SnapshotClockUnreadable, match="b: timed out"):
        snapshot_time(clocks, timedelta(seconds=30), timedelta(seconds=5))
    with pytest.raises(SnapshotClockUnreadable):
        snapshot_time([], timedelta(seconds=30), timedelta(seconds=5))


def test_nothing_new_is_an_empty_plan() -> None:
    plan = plan_apply(progress(T0), LakeCoverage(T0, T0 - timedelta(seconds=1)))
    assert plan.empty and plan.until == T0


def test_a_sink_never_bootstrapped_is_refused_with_the_command() -> None:
    command = "cdcgen replication bootstrap --table shop.orders --sink-table shop_dr.orders"
    with pytest.raises(ReplicationError, match=re.escape(command)):
        plan_apply(progress(None), LakeCoverage(T0, T0))


def test_a_sink_behind_what_the_lake_holds_must_be_re_bootstrapped() -> None:
    with pytest.raises(ReplicationError) as failure:
        plan_apply(progress(T0), LakeCoverage(T0 + timedelta(seconds=1), T0 + timedelta(hours=1)))
    assert "--replace" in str(failure.value) and "TTL" in str(failure.value)


def test_an_empty_lake_is_refused() -> None:
    with pytest.raises(ReplicationError, match="cdc_changes"):
        plan_apply(progress(T0), LakeCoverage(None, None))


def test_a_changes_re_bootstrap_moves_where_the_lake_is_complete() -> None:
    table = TableProgress(SOURCE, T0, T0 + timedelta(hours=2), None, "", 3, T0 + timedelta(hours=1))
    assert table.complete_since == T0 + timedelta(hours=1)
    assert TableProgress(SOURCE, T0, None, None, "").complete_since == T0
