"""Task bodies of ``cdc_changes``: Airflow in, one pipeline call, JSON out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from cdcgen.airflow.connections import DEFAULT_CONNECTIONS, ClusterConnections
from cdcgen.airflow.failures import fail_fast
from cdcgen.airflow.generation_steps import run_config, run_type_of

if TYPE_CHECKING:
    from pydantic import JsonValue

    from cdcgen.pipeline.changes_plan import PlannedTable


@fail_fast
def changes_plan(
    params: Mapping[str, Any],
    dag_run: Any,
    interval_start: datetime | None,
    interval_end: datetime | None,
    connections: ClusterConnections = DEFAULT_CONNECTIONS,
    follow: timedelta | None = None,
) -> list[PlannedTable]:
    """The run's tables, each with its window end (for the wait) and its Spark job; with
    ``follow``, a job that follows its table that long."""
    from cdcgen.pipeline import changes_plan

    return changes_plan.plan(
        run_config(params, connections.source),
        run_type=run_type_of(dag_run.run_type),
        interval_start=interval_start,
        interval_end=interval_end,
        run_after=getattr(dag_run, "run_after", None),
        run_id=dag_run.run_id,
        dag_id=dag_run.dag_id,
        tables=str(params.get("tables") or ""),
        follow=follow,
    )


@fail_fast
def changes_summary(
    params: Mapping[str, Any],
    run_id: str,
    planned: Sequence[PlannedTable] | None,
    connections: ClusterConnections = DEFAULT_CONNECTIONS,
    ti: Any = None,
) -> dict[str, JsonValue]:
    """Every table's result in one summary; fails the run naming each table that failed.
    Its metrics go out first, failed or not (:mod:`cdcgen.airflow.metrics`)."""
    from datetime import UTC

    from cdcgen.airflow import metrics
    from cdcgen.pipeline import changes_plan
    from cdcgen.pipeline.errors import RunIncomplete

    summary = changes_plan.changes_run_summary(
        run_config(params, connections.source), run_id, planned
    )
    points = metrics.changes_points(summary, connections.source, datetime.now(UTC))
    metrics.record(points, ti)
    if summary.problems:
        raise RunIncomplete("; ".join(summary.problems))
    return summary.to_json()
