"""The runs' summaries as metric points, named and tagged (cdcgen.airflow.metrics)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cdcgen.airflow import metrics
from cdcgen.airflow.metrics import Kind, MetricPoint
from cdcgen.core.changes_result import ChangesRunResult
from cdcgen.core.changes_status import ChangesRunStatus
from cdcgen.pipeline.changes_plan import ChangesRunSummary
from cdcgen.pipeline.replication_summary import ReplicationRunSummary, TableReplication
from cdcgen.pipeline.run_summary import GenerationsRunSummary

AT = datetime(2026, 11, 28, 9, 0, 0, tzinfo=UTC)


def changes_summary() -> ChangesRunSummary:
    tables = {
        "shop.orders": ChangesRunResult(
            table="shop.orders",
            status=ChangesRunStatus.DONE,
            rows_written=1234,
            watermark="2026-11-28T08:58:30.500000+00:00",
        ),
        "shop.carts": ChangesRunResult(table="shop.carts", status=ChangesRunStatus.NOT_EXTRACTED),
    }
    return ChangesRunSummary(
        run_id="manual__1",
        tables=tables,
        changes_rows=1234,
        colocation="passed",
        checks="passed",
        watermarks={name: t.watermark for name, t in tables.items()},
        lake_format="delta",
        lake_versions={},
        problems=("shop.carts: not extracted (its wait or Spark job failed)",),
    )


def test_a_changes_run_gives_each_table_its_rows_and_its_lag_behind_the_watermark() -> None:
    points = metrics.changes_points(changes_summary(), "east_source", AT)
    orders = {"cluster": "east_source", "table": "shop.orders"}
    carts = {"cluster": "east_source", "table": "shop.carts"}
    assert points == [
        MetricPoint("cdcgen.changes.rows_extracted", 0, Kind.COUNTER, carts),
        MetricPoint("cdcgen.changes.rows_extracted", 1234, Kind.COUNTER, orders),
        MetricPoint("cdcgen.changes.watermark_lag_seconds", 89.5, Kind.GAUGE, orders),
    ]


def test_a_replication_run_gives_each_table_its_applied_rejected_and_sink_lag() -> None:
    summary = ReplicationRunSummary(
        run_id="r",
        tables={
            "shop.orders": TableReplication(
                status="rejected", applied_log_rows=40, rejected_count=2, lag_seconds=12.25
            ),
            "shop.carts": TableReplication(status="not replicated"),
        },
        applied_log_rows=40,
    )
    points = metrics.replication_points(summary, "cdc_source")
    orders = {"cluster": "cdc_source", "table": "shop.orders"}
    carts = {"cluster": "cdc_source", "table": "shop.carts"}
    assert points == [
        MetricPoint("cdcgen.replication.rows_applied", 0, Kind.COUNTER, carts),
        MetricPoint("cdcgen.replication.changes_rejected", 0, Kind.COUNTER, carts),
        MetricPoint("cdcgen.replication.rows_applied", 40, Kind.COUNTER, orders),
        MetricPoint("cdcgen.replication.changes_rejected", 2, Kind.COUNTER, orders),
        MetricPoint("cdcgen.replication.sink_lag_seconds", 12.25, Kind.GAUGE, orders),
    ]


def generations_summary(detected: int, published: tuple[str, ...]) -> GenerationsRunSummary:
    return GenerationsRunSummary(
        run_id="g",
        generations_detected=detected,
        generations_published=len(published),
        streams_published=0,
        published=published,
        rejected=(),
        not_validated=(),
        held_back=(),
        validation="passed",
        ring_checks="not run",
        ring_checked=(),
        ring_unknown=(),
        report=None,
        reports=(),
        lake_format="delta",
        lake_versions={},
    )


def test_a_generations_run_gives_the_cluster_its_unpublished_and_the_newest_delay() -> None:
    published = ("2026-11-28T08:50:00.000+00:00", "2026-11-28T08:59:20.000+00:00")
    points = metrics.generations_points(generations_summary(3, published), "cdc_source", AT)
    tags = {"cluster": "cdc_source"}
    assert points == [
        MetricPoint("cdcgen.generations.unpublished", 1, Kind.GAUGE, tags),
        MetricPoint("cdcgen.generations.publication_delay_seconds", 40.0, Kind.GAUGE, tags),
    ]


def test_a_run_that_published_nothing_reports_no_delay() -> None:
    points = metrics.generations_points(generations_summary(2, ()), "cdc_source", AT)
    assert [(p.name, p.value) for p in points] == [("cdcgen.generations.unpublished", 2)]


def test_without_tags_the_cluster_and_table_are_in_the_name() -> None:
    point = MetricPoint(
        "cdcgen.changes.rows_extracted", 1, Kind.COUNTER, {"table": "ks.t", "cluster": "east-1"}
    )
    assert point.untagged_name() == "cdcgen.changes.rows_extracted.east-1.ks__t"
    cluster_only = MetricPoint("cdcgen.generations.unpublished", 0, Kind.GAUGE, {"cluster": "c"})
    assert cluster_only.untagged_name() == "cdcgen.generations.unpublished.c"


@pytest.mark.parametrize(
    ("flags", "tagged"),
    [
        ({"datadog": True, "statsd": False, "influxdb": False, "otel": False}, True),
        ({"datadog": False, "statsd": True, "influxdb": False, "otel": False}, False),
        ({"datadog": False, "statsd": True, "influxdb": True, "otel": False}, True),
        ({"datadog": False, "statsd": True, "influxdb": False, "otel": True}, False),
        ({"datadog": False, "statsd": False, "influxdb": False, "otel": True}, True),
    ],
)
def test_tags_go_as_tags_only_to_a_backend_that_keeps_them(
    flags: dict[str, bool], tagged: bool
) -> None:
    assert metrics.carries_tags(**flags) is tagged


def test_points_travel_through_xcom_unchanged() -> None:
    points = metrics.changes_points(changes_summary(), "cdc_source", AT)
    assert metrics.from_xcom(metrics.as_xcom(points)) == points
    assert metrics.from_xcom(None) == []


def test_a_table_s_metrics_its_summary_and_its_report_record_say_the_same() -> None:
    """One outcome, three views: the rows and the watermark lag of the metrics are those
    of the table's summary and of its report record, and a failed run is failed in both."""
    from cdcgen.changes.report import changes_report
    from cdcgen.pipeline.changes_plan import table_summary
    from cdcgen.reports.records import RunStatus

    outcome = ChangesRunResult(
        table="shop.orders",
        interval=("2026-11-28T08:45:00+00:00", "2026-11-28T08:58:00+00:00"),
        rows_written=321,
        watermark="2026-11-28T08:58:00+00:00",
        status=ChangesRunStatus.ROW_CHECKS_FAILED,
    )
    tags = {"cluster": "cdc_source", "table": "shop.orders"}
    rows, lag = metrics.outcome_points(outcome, tags, AT)
    summary = table_summary(outcome)
    record = changes_report(outcome, now=AT)
    assert rows == MetricPoint("cdcgen.changes.rows_extracted", 321, Kind.COUNTER, tags)
    assert rows.value == summary["rows"] == record.tables[0].rows
    assert lag == MetricPoint("cdcgen.changes.watermark_lag_seconds", 120.0, Kind.GAUGE, tags)
    assert lag.value == record.tables[0].lag_seconds
    assert summary["status"] == "row checks failed" and record.status is RunStatus.FAILED
    # Before its first watermark, a table has rows and no lag.
    (only,) = metrics.outcome_points(outcome.updated(watermark=None), tags, AT)
    assert only.name == "cdcgen.changes.rows_extracted"
