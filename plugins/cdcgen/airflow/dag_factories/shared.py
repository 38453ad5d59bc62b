"""What the DAG factories share, written once: the first data interval, every task's
defaults, the Params two DAGs declare alike, and continuous mode's limits.

A Param's name and default are also a field of :class:`~cdcgen.airflow.run_params.RunParams`,
which is how the task bodies read it; its schema, title and description are what the
trigger form shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pendulum
from airflow.sdk import Asset, AssetOrTimeSchedule, BaseNotifier, CronDataIntervalTimetable, Param

from cdcgen.airflow import alerts
from cdcgen.airflow.connections import ClusterConnections

#: Every default DAG's first data interval.
START_DATE = pendulum.datetime(2026, 1, 1, tz="UTC")

#: A run's longest follow: within the run's timeout (``dagrun_timeout``), with time left
#: for its waits, its last cycle and its summary.
MAX_FOLLOW = timedelta(hours=3)

#: Where a ``lake_path`` Param may point, and what empty means.
LAKE_PATH_RULE = (
    "empty: CDCGEN_LAKE_PATH or lake/. Absolute, inside CDCGEN_LAKE_PATH or a "
    "CDCGEN_LAKE_ROOTS root."
)


def default_args(
    *,
    retries: int,
    retry_delay: timedelta,
    notifiers: Sequence[BaseNotifier] | None,
    connections: ClusterConnections,
) -> dict[str, Any]:
    """Every task's defaults (Airflow's ``default_args``): its retries, which a task may
    set otherwise, their delay, and the DAG's ``notifiers``, told of every failed task
    (default: :class:`~cdcgen.airflow.alerts.AlertNotifier` on ``connections.alerts``)."""
    return {
        "retries": retries,
        "retry_delay": retry_delay,
        "on_failure_callback": alerts.failure_callbacks(notifiers, connections.alerts),
    }


def text_param(title: str, description: str) -> Param:
    """A text Param, empty by default (the task bodies read empty as "not narrowed")."""
    return Param("", type="string", title=title, description=description)


def flag_param(title: str, description: str) -> Param:
    """A boolean Param, off by default."""
    return Param(False, type="boolean", title=title, description=description)


def lake_path_param(what: str) -> Param:
    """The run's ``lake_path``: where ``what`` goes, within the lake roots configured."""
    return text_param("Lake path", f"{what}; {LAKE_PATH_RULE}")


def tables_param(which: str) -> Param:
    """The run's ``tables``: ``keyspace.table[,...]``, then ``which`` (what it may name,
    what empty means)."""
    return text_param("Tables", f"keyspace.table[,...]{which}")


def check_follow(follow: timedelta | None) -> None:
    """Refuse a continuous mode that a run's timeout would cut short."""
    if follow is not None and not timedelta(0) < follow <= MAX_FOLLOW:
        raise ValueError(f"follow must be positive and at most {MAX_FOLLOW}, not {follow}")


def follow_schedule(
    cron: str, follow: timedelta | None, asset: Asset
) -> AssetOrTimeSchedule | CronDataIntervalTimetable:
    """The cron expression, or the upstream ``asset``'s events, whichever comes first; in
    continuous mode the cron alone: a following run picks up what the upstream DAG did
    by itself, and a run queued per upstream event would only wait behind it."""
    timetable = CronDataIntervalTimetable(cron, timezone="UTC")
    if follow is not None:
        return timetable
    return AssetOrTimeSchedule(timetable=timetable, assets=[asset])
