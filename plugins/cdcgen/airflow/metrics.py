"""The pipeline's metrics, sent through Airflow's own (StatsD or OpenTelemetry, as the
deployment's ``[metrics]`` section configures): one place that names them all.

A platform team watches cdcgen with the dashboards and alert rules it has for its other
pipelines, so the values travel the way Airflow's own metrics do, with Airflow's prefix
(``[metrics] statsd_prefix``, ``airflow`` by default) in front of the names below; the
package opens no socket of its own. They are computed from the runs' typed summaries
(:mod:`cdcgen.pipeline.run_summary`, :mod:`cdcgen.pipeline.replication_summary`; a
changes table's from its run's outcome, which :mod:`cdcgen.pipeline.changes_plan` holds) by
pure functions, which a unit test checks without Airflow, and sent by :func:`emit`,
called by each DAG's ``summarize`` task.

Names, with the tags ``cluster`` (the source connection's id) and ``table``
(``keyspace.table``):

==============================================  =======  ===========================
name                                            type     what
==============================================  =======  ===========================
``cdcgen.changes.watermark_lag_seconds``        gauge    now - the table's watermark
``cdcgen.changes.rows_extracted``               counter  rows the run wrote to the lake
``cdcgen.replication.rows_applied``             counter  log rows applied to the sink
``cdcgen.replication.changes_rejected``         counter  changes the sink refused
``cdcgen.replication.sink_lag_seconds``         gauge    how far the sink is behind
``cdcgen.generations.unpublished``              gauge    detected, not yet published
``cdcgen.generations.publication_delay_seconds`` gauge   newest publication's delay
==============================================  =======  ===========================

(the generations' two with the ``cluster`` tag only). A backend that carries tags
(``statsd_datadog_enabled``, ``statsd_influxdb_enabled``, or OpenTelemetry's
attributes) gets these names and tags. Plain StatsD drops tags, and two tables' values
would then land on one series: it gets the tags in the name instead, as Airflow's own
legacy names do (``<name>.<cluster>[.<table>]``, a ``.`` inside a value written
``__``): ``cdcgen.changes.rows_extracted.cdc_source.shop__orders``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, TypedDict

from cdcgen.core.changes_result import ChangesRunResult
from cdcgen.core.time import parse_moment
from cdcgen.pipeline.changes_plan import ChangesRunSummary
from cdcgen.pipeline.replication_summary import ReplicationRunSummary
from cdcgen.pipeline.run_summary import GenerationsRunSummary

log = logging.getLogger(__name__)

PREFIX = "cdcgen"
WATERMARK_LAG = f"{PREFIX}.changes.watermark_lag_seconds"
ROWS_EXTRACTED = f"{PREFIX}.changes.rows_extracted"
ROWS_APPLIED = f"{PREFIX}.replication.rows_applied"
CHANGES_REJECTED = f"{PREFIX}.replication.changes_rejected"
SINK_LAG = f"{PREFIX}.replication.sink_lag_seconds"
UNPUBLISHED = f"{PREFIX}.generations.unpublished"
PUBLICATION_DELAY = f"{PREFIX}.generations.publication_delay_seconds"

#: The lags a run's ``check_lag`` task holds against ``CDCGEN_ALERT_LAG_SECONDS``, each
#: with what it is behind (for the alert's message).
LAGS = {WATERMARK_LAG: "behind its watermark", SINK_LAG: "sink behind the source"}

#: The XCom key under which a ``summarize`` task leaves its points (``check_lag`` reads it).
XCOM_KEY = "metrics"


class PointJson(TypedDict):
    """A point as XCom carries it from ``summarize`` to ``check_lag``."""

    name: str
    value: float
    kind: str
    tags: dict[str, str]


class Kind(StrEnum):
    """A gauge is a level (the last value counts); a counter adds up over runs."""

    GAUGE = "gauge"
    COUNTER = "counter"


@dataclass(frozen=True)
class MetricPoint:
    """One value to send: its name, kind and tags (``cluster``, maybe ``table``)."""

    name: str
    value: float
    kind: Kind
    tags: Mapping[str, str] = field(default_factory=dict)

    def untagged_name(self) -> str:
        """The name for a backend without tags: the tag values appended, cluster first."""
        values = [self.tags[key] for key in ("cluster", "table") if key in self.tags]
        return ".".join([self.name, *(v.replace(".", "__") for v in values)])

    def to_json(self) -> PointJson:
        return {
            "name": self.name,
            "value": self.value,
            "kind": self.kind.value,
            "tags": dict(self.tags),
        }

    @classmethod
    def from_json(cls, data: PointJson) -> MetricPoint:
        return cls(
            name=str(data["name"]),
            value=float(data["value"]),
            kind=Kind(data["kind"]),
            tags={str(k): str(v) for k, v in dict(data.get("tags") or {}).items()},
        )


def _seconds(later: datetime, earlier: datetime) -> float:
    return round((later - earlier).total_seconds(), 3)


def changes_points(summary: ChangesRunSummary, cluster: str, at: datetime) -> list[MetricPoint]:
    """Every table's :func:`outcome_points`, tagged with the table's name as planned."""
    points = []
    for table, outcome in sorted(summary.tables.items()):
        points += outcome_points(outcome, {"cluster": cluster, "table": table}, at)
    return points


def outcome_points(
    outcome: ChangesRunResult, tags: Mapping[str, str], at: datetime
) -> list[MetricPoint]:
    """A table's run: the rows it extracted, and (once the table has a watermark) how
    far ``at`` is past it."""
    points = [MetricPoint(ROWS_EXTRACTED, outcome.rows_written, Kind.COUNTER, tags)]
    if outcome.watermark is not None:
        lag = _seconds(at, parse_moment(outcome.watermark, "watermark"))
        points.append(MetricPoint(WATERMARK_LAG, lag, Kind.GAUGE, tags))
    return points


def replication_points(summary: ReplicationRunSummary, cluster: str) -> list[MetricPoint]:
    """Per table: the log rows applied, the changes the sink refused, and (once the
    sink has a consistency point) its lag, as the run measured it when it ended."""
    points = []
    for table, result in sorted(summary.tables.items()):
        tags = {"cluster": cluster, "table": table}
        points.append(MetricPoint(ROWS_APPLIED, result.applied_log_rows, Kind.COUNTER, tags))
        points.append(MetricPoint(CHANGES_REJECTED, result.rejected_count, Kind.COUNTER, tags))
        if result.lag_seconds is not None:
            points.append(MetricPoint(SINK_LAG, result.lag_seconds, Kind.GAUGE, tags))
    return points


def generations_points(
    summary: GenerationsRunSummary, cluster: str, at: datetime
) -> list[MetricPoint]:
    """The generations the run found and did not publish (zero when it published them
    all), and, when it published some, how long after the newest one's timestamp it
    went out (``at``: the summary's moment, right after the publication)."""
    tags = {"cluster": cluster}
    waiting = summary.generations_detected - summary.generations_published
    points = [MetricPoint(UNPUBLISHED, waiting, Kind.GAUGE, tags)]
    if summary.published:
        newest = max(parse_moment(iso, "generation timestamp") for iso in summary.published)
        delay = _seconds(at, newest)
        points.append(MetricPoint(PUBLICATION_DELAY, delay, Kind.GAUGE, tags))
    return points


def carries_tags(*, datadog: bool, statsd: bool, influxdb: bool, otel: bool) -> bool:
    """Whether the backend Airflow picks for these ``[metrics]`` settings keeps tags
    (the order of Airflow's own choice: Datadog, then StatsD, then OpenTelemetry)."""
    if datadog:
        return True
    if statsd:
        return influxdb
    return otel


def _configured_tags() -> bool:
    from airflow.sdk.configuration import conf

    def flag(key: str) -> bool:
        return bool(conf.getboolean("metrics", key, fallback=False))

    return carries_tags(
        datadog=flag("statsd_datadog_enabled"),
        statsd=flag("statsd_on"),
        influxdb=flag("statsd_influxdb_enabled"),
        otel=flag("otel_on"),
    )


def emit(points: Iterable[MetricPoint], tagged: bool | None = None) -> None:
    """Send ``points`` through Airflow's Stats (a no-op when no backend is configured);
    ``tagged``: whether the backend keeps tags (default: as ``[metrics]`` says)."""
    from airflow.sdk.observability.stats import Stats

    with_tags = _configured_tags() if tagged is None else tagged
    for point in points:
        name = point.name if with_tags else point.untagged_name()
        tags = dict(point.tags) if with_tags else None
        if point.kind is Kind.COUNTER:
            Stats.incr(name, count=int(point.value), tags=tags)
        else:
            Stats.gauge(name, point.value, tags=tags)


def as_xcom(points: Sequence[MetricPoint]) -> list[PointJson]:
    return [point.to_json() for point in points]


def from_xcom(values: Sequence[PointJson] | None) -> list[MetricPoint]:
    return [MetricPoint.from_json(value) for value in values or ()]


def record(points: Sequence[MetricPoint], ti: Any = None) -> None:
    """Send ``points`` and leave them in XCom for the run's ``check_lag`` (``ti``: the
    task's instance). A backend that fails is logged: metrics watch the run, and a
    collector that is down must not fail a run that did its work."""
    try:
        emit(points)
    except Exception as exc:  # any backend's failure: reported, not raised
        log.warning("metrics not sent: %s: %s", type(exc).__name__, exc)
    for point in points:
        log.info("metric %s = %g %s", point.name, point.value, dict(point.tags))
    if ti is not None:
        ti.xcom_push(key=XCOM_KEY, value=as_xcom(points))
