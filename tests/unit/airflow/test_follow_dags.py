"""The DAG factories' continuous mode: a follow a run's timeout would cut short is refused."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cdcgen.airflow.dag_factories.changes_dag import cdc_changes_dag
from cdcgen.airflow.dag_factories.replication_dag import cdc_replication_dag
from cdcgen.airflow.dag_factories.shared import MAX_FOLLOW


@pytest.mark.parametrize("factory", [cdc_changes_dag, cdc_replication_dag])
def test_a_follow_longer_than_a_run_may_last_or_not_positive_is_refused(factory: object) -> None:
    for follow in (timedelta(0), timedelta(seconds=-1), MAX_FOLLOW + timedelta(seconds=1)):
        with pytest.raises(ValueError, match="follow must be positive and at most"):
            factory(dag_id="follow_refused", follow=follow)  # type: ignore[operator]


def test_a_follow_within_the_run_s_timeout_builds_the_same_tasks() -> None:
    scheduled = cdc_changes_dag(dag_id="scheduled_changes")
    following = cdc_changes_dag(dag_id="following_changes", follow=timedelta(minutes=14))
    assert set(following.task_dict) == set(scheduled.task_dict)
    assert following.dagrun_timeout is not None and following.dagrun_timeout > MAX_FOLLOW


@pytest.mark.parametrize("factory", [cdc_changes_dag, cdc_replication_dag])
def test_a_following_dag_runs_on_its_cron_alone(factory: object) -> None:
    """A run per upstream Asset event would only queue behind the run following."""
    from airflow.sdk import AssetOrTimeSchedule

    scheduled = factory(dag_id="scheduled")  # type: ignore[operator]
    following = factory(dag_id="following", follow=timedelta(minutes=15))  # type: ignore[operator]
    assert isinstance(scheduled.timetable, AssetOrTimeSchedule)
    assert not isinstance(following.timetable, AssetOrTimeSchedule)
    assert (
        following.timetable.expression == scheduled.timetable.timetable.expression == "*/15 * * * *"
    )


def test_the_extract_jobs_take_the_spark_conf_given() -> None:
    dag = cdc_changes_dag(dag_id="capped", spark_conf={"spark.cores.max": "1"})
    conf = dag.task_dict["table.extract"].conf  # type: ignore[attr-defined]
    assert conf["spark.cores.max"] == "1"
    assert conf["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MICROS"  # kept
