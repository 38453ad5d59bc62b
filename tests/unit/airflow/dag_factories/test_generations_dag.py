"""The generations DAG factory's schedule: the watcher on by default beside the cron
safety net, the cron alone when it is turned off, its Asset named by the cluster."""

from __future__ import annotations

from airflow.sdk import AssetOrTimeSchedule, CronDataIntervalTimetable

from cdcgen.airflow.connections import ClusterConnections
from cdcgen.airflow.dag_factories.generations_dag import cdc_generations_dag
from cdcgen.airflow.triggers import WATCH_POLL_SECONDS, GenerationCommittedTrigger


def test_the_watcher_is_on_by_default_with_the_cron_schedule_as_safety_net() -> None:
    dag = cdc_generations_dag(dag_id="watched", schedule="*/7 * * * *")
    schedule = dag.timetable
    assert isinstance(schedule, AssetOrTimeSchedule)
    assert isinstance(schedule.timetable, CronDataIntervalTimetable)
    assert schedule.timetable.expression == "*/7 * * * *"
    (asset,) = schedule.asset_condition.objects
    assert asset.name == "cdc_source.cdc_committed_generations"
    (watcher,) = asset.watchers
    trigger = watcher.trigger
    assert isinstance(trigger, GenerationCommittedTrigger)
    assert trigger.serialize()[1] == {
        "conn_id": "cdc_source",
        "target_keyspace": "system_distributed",
        "poll_interval": WATCH_POLL_SECONDS,
    }


def test_another_cluster_s_watcher_reads_its_own_connection() -> None:
    east = ClusterConnections(source="east_source", spark="east_spark", sink="east_sink")
    dag = cdc_generations_dag(dag_id="east", connections=east, watch_poll_interval=2.0)
    (asset,) = dag.timetable.asset_condition.objects
    assert asset.name == "east_source.cdc_committed_generations"
    kwargs = asset.watchers[0].trigger.serialize()[1]
    assert (kwargs["conn_id"], kwargs["poll_interval"]) == ("east_source", 2.0)


def test_turned_off_the_cron_schedule_alone_remains() -> None:
    dag = cdc_generations_dag(dag_id="clock_only", watch=False)
    assert isinstance(dag.timetable, CronDataIntervalTimetable)
    assert dag.timetable.expression == "*/10 * * * *"
