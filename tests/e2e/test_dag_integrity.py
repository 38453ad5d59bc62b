"""Every DAG parses cleanly and cheaply; the wait step's trigger and sensor behave.

The first three checks are Airflow's own example-DAG tests: the file imports
without errors, parsing issues no metadata-DB query and fetches no connection.
Each DAG file is parsed in a fresh interpreter (tests/e2e/dag_probe.py) so what
it imports is measured, not what earlier tests imported.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cdcgen.airflow.xcom import to_xcom
from cdcgen.core.clocks import NodeClock
from cdcgen.core.generation import Generation
from cdcgen.core.time import from_millis
from cdcgen_dev.airflow_home import airflow_env
from cdcgen_dev.paths import REPO_ROOT

DAG_FILES = sorted((REPO_ROOT / "dags").glob("*.py"))
PROBE = Path(__file__).with_name("dag_probe.py")


@pytest.fixture(scope="module")
def parse_reports(airflow_template_home: Path) -> dict[str, dict[str, Any]]:
    reports = {}
    for path in DAG_FILES:
        result = subprocess.run(
            [sys.executable, str(PROBE), str(path)],
            env=airflow_env(airflow_template_home),
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        reports[path.name] = json.loads(result.stdout.strip().splitlines()[-1])
    return reports


BAD_SETTINGS = {
    "CDCGEN_LEEWAY_SECONDS": "-5",
    "CDCGEN_CONFIDENCE_WINDOW_SECONDS": "inf",
    "CDCGEN_PORT": "nine",
    "CDCGEN_CLOCK_SOURCE": "sundial",
    "CDCGEN_TARGET_KEYSPACE": "system",
}


@pytest.mark.parametrize("dag_file", [p.name for p in DAG_FILES])
def test_bad_settings_fail_runs_not_the_parsing_of_dag_files(
    airflow_template_home: Path, dag_file: str
) -> None:
    from cdcgen.airflow.generation_steps import run_config
    from cdcgen.errors import ConfigError

    env = {**airflow_env(airflow_template_home), **BAD_SETTINGS}
    result = subprocess.run(
        [sys.executable, str(PROBE), str(REPO_ROOT / "dags" / dag_file)],
        env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["import_errors"] == {} and report["dag_ids"]
    connection = {k: v for k, v in env.items() if k.startswith("AIRFLOW_CONN_")}
    for variable, value in BAD_SETTINGS.items():  # ... and a run says what is wrong
        if variable == "CDCGEN_PORT":
            continue  # the connection's port is the one a run uses
        with pytest.MonkeyPatch.context() as patched:
            for name, text in {**connection, variable: value}.items():
                patched.setenv(name, text)
            with pytest.raises(ConfigError, match=f"{variable}='{value}'"):
                run_config({})


def test_there_are_dags() -> None:
    assert [p.name for p in DAG_FILES if p.name == "cdc_generations.py"]


@pytest.mark.parametrize("dag_file", [p.name for p in DAG_FILES])
def test_should_be_importable(parse_reports: dict[str, dict[str, Any]], dag_file: str) -> None:
    report = parse_reports[dag_file]
    assert report["import_errors"] == {}
    assert report["dag_ids"], f"{dag_file} defines no DAG"


@pytest.mark.parametrize("dag_file", [p.name for p in DAG_FILES])
def test_should_not_do_database_queries(
    parse_reports: dict[str, dict[str, Any]], dag_file: str
) -> None:
    assert parse_reports[dag_file]["queries"] == []


@pytest.mark.parametrize("dag_file", [p.name for p in DAG_FILES])
def test_should_not_run_hook_connections(
    parse_reports: dict[str, dict[str, Any]], dag_file: str
) -> None:
    # Operators and sensors must create hooks in execute, never in __init__ or at parse time.
    assert parse_reports[dag_file]["get_connection_calls"] == 0


@pytest.mark.parametrize("dag_file", [p.name for p in DAG_FILES])
def test_should_not_import_heavy_sdks(
    parse_reports: dict[str, dict[str, Any]], dag_file: str
) -> None:
    assert parse_reports[dag_file]["heavy_modules"] == []


# --- the DAG's shape -----------------------------------------------------------------


@pytest.fixture(scope="module")
def cdc_dag() -> Any:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO_ROOT / "dags" / "cdc_generations.py"))
    assert bag.import_errors == {}
    return bag.dags["cdc_generations"]


def test_schedule_has_data_intervals(cdc_dag: Any) -> None:
    from airflow.sdk import AssetOrTimeSchedule, CronDataIntervalTimetable

    from cdcgen.airflow.triggers import GenerationCommittedTrigger

    # A watcher's events, and the cron schedule as the safety net.
    assert isinstance(cdc_dag.timetable, AssetOrTimeSchedule)
    assert isinstance(cdc_dag.timetable.timetable, CronDataIntervalTimetable)
    (committed,) = cdc_dag.timetable.asset_condition.objects
    assert isinstance(committed.watchers[0].trigger, GenerationCommittedTrigger)
    assert cdc_dag.catchup is False
    assert cdc_dag.max_active_runs == 1
    assert set(cdc_dag.params) == {"generation_id", "force", "lake_path"}


def test_one_mapped_group_per_generation(cdc_dag: Any) -> None:
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from cdcgen.airflow.connections import SPARK_CONN_ID
    from cdcgen.airflow.sensors import GenerationStartedSensor

    group = cdc_dag.task_group_dict["generation"]
    assert type(group).__name__ == "MappedTaskGroup"
    wait = cdc_dag.get_task("generation.wait")
    extract = cdc_dag.get_task("generation.extract")
    assert isinstance(wait, GenerationStartedSensor) and wait.deferrable
    assert isinstance(extract, SparkSubmitOperator)
    assert extract._conn_id == SPARK_CONN_ID
    assert Path(extract.application).name == "extract_generation.py"
    chain = ["generation.wait", "generation.extract", "generation.validate", "publish", "summarize"]
    for upstream, downstream in itertools.pairwise(chain):
        assert downstream in cdc_dag.get_task(upstream).downstream_task_ids
    # One ordered publication step, emitting one Asset event per generation via an alias.
    assert [type(o).__name__ for o in cdc_dag.get_task("publish").outlets] == ["AssetAlias"]


def test_changes_dag_runs_on_time_and_on_published_generations() -> None:
    from airflow.dag_processing.dagbag import DagBag
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.sdk import AssetOrTimeSchedule, CronDataIntervalTimetable

    from cdcgen.airflow.assets import published_generations
    from cdcgen.airflow.sensors import WindowClosedSensor

    bag = DagBag(dag_folder=str(REPO_ROOT / "dags" / "cdc_changes.py"))
    assert bag.import_errors == {}
    dag = bag.dags["cdc_changes"]
    schedule = dag.timetable
    assert isinstance(schedule, AssetOrTimeSchedule)
    assert isinstance(schedule.timetable, CronDataIntervalTimetable)
    assert [a.uri for a in schedule.asset_condition.objects] == [published_generations().uri]
    assert dag.max_active_runs == 1 and set(dag.params) == {"tables", "lake_path"}
    wait, extract = dag.get_task("table.wait"), dag.get_task("table.extract")
    assert isinstance(wait, WindowClosedSensor) and wait.deferrable
    assert isinstance(extract, SparkSubmitOperator)
    assert Path(extract.application).name == "extract_changes.py"
    assert extract.retries == 0  # a retry would not re-check rows already checkpointed
    chain = ["plan", "table.wait", "table.extract", "summarize"]
    for upstream, downstream in itertools.pairwise(chain):
        assert downstream in dag.get_task(upstream).downstream_task_ids
    assert dag.get_task("summarize").trigger_rule == "all_done"
    assert all(task.doc_md for task in dag.tasks), [t.task_id for t in dag.tasks if not t.doc_md]


def test_replication_dag_ends_with_a_summary_of_every_table() -> None:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO_ROOT / "dags" / "cdc_replication.py"))
    assert bag.import_errors == {}
    dag = bag.dags["cdc_replication"]
    chain = ["plan", "table.bootstrap", "table.apply", "summarize"]
    for upstream, downstream in itertools.pairwise(chain):
        assert downstream in dag.get_task(upstream).downstream_task_ids
    assert dag.get_task("summarize").trigger_rule == "all_done"
    assert all(task.doc_md for task in dag.tasks), [t.task_id for t in dag.tasks if not t.doc_md]


SECOND_CLUSTER = """
from cdcgen.airflow.dag_factories import (
    ClusterConnections, cdc_changes_dag, cdc_generations_dag, cdc_generations_maintenance_dag,
    cdc_replication_dag,
)

east = ClusterConnections(source="east_source", spark="east_spark", sink="east_sink")
generations = cdc_generations_dag(dag_id="east_generations", connections=east)
maintenance = cdc_generations_maintenance_dag(dag_id="east_maintenance", connections=east)
changes = cdc_changes_dag(dag_id="east_changes", schedule="*/5 * * * *", connections=east)
replication = cdc_replication_dag(dag_id="east_replication", connections=east)
"""


def assets_of(dag: Any) -> set[str]:
    """Names of the Assets and aliases a DAG waits for or updates."""
    condition = getattr(dag.timetable, "asset_condition", None)
    names = {a.name for a in getattr(condition, "objects", None) or ()}
    for task in dag.tasks:
        names |= {outlet.name for outlet in task.outlets}
    return names


def test_a_second_cluster_s_dags_import_beside_the_defaults_without_a_collision(
    tmp_path: Path,
) -> None:
    from airflow.dag_processing.dagbag import DagBag

    folder = tmp_path / "dags"
    folder.mkdir()
    for default in (REPO_ROOT / "dags").glob("*.py"):
        (folder / default.name).write_text(default.read_text())
    (folder / "east_cluster_dags.py").write_text(SECOND_CLUSTER)
    bag = DagBag(dag_folder=str(folder))
    assert bag.import_errors == {}
    defaults = {"cdc_generations", "cdc_generations_maintenance", "cdc_changes", "cdc_replication"}
    east = {"east_generations", "east_maintenance", "east_changes", "east_replication"}
    assert set(bag.dags) == defaults | east
    default_assets = set().union(*(assets_of(bag.dags[d]) for d in defaults))
    east_assets = set().union(*(assets_of(bag.dags[d]) for d in east))
    assert default_assets and east_assets and not default_assets & east_assets
    assert all(name.startswith("east_source.") for name in east_assets), east_assets
    # Each cluster's changes follow its own publications, its replication its own changes.
    changes, generations = bag.dags["east_changes"], bag.dags["east_generations"]
    published = {a.name for a in changes.timetable.asset_condition.objects}
    assert published == {"east_source.system_distributed.cdc_generation_timestamps"}
    assert changes.timetable.timetable.expression == "*/5 * * * *"
    assert assets_of(generations) == {
        "east_source.cdc_published_generations",
        "east_source.cdc_committed_generations",
    }
    conn_ids = {
        getattr(task, name)
        for dag in (bag.dags[d] for d in east)
        for task in dag.tasks
        for name in ("cdc_conn_id", "sink_conn_id", "_conn_id")
        if isinstance(getattr(task, name, None), str)
    }
    assert conn_ids == {"east_source", "east_spark", "east_sink"}


# --- trigger and sensor --------------------------------------------------------------

TS_MS = 1_790_000_000_000
SOURCE = {
    "contact_points": ["127.0.0.1", "127.0.0.2"],
    "port": 9042,
    "source_mode": "raft",
    "source_keyspace_prefix": "sandbox_",
    "clock_source": "sandbox",
}


def test_trigger_serialize_round_trip() -> None:
    from airflow.sdk._shared.module_loading import import_string
    from airflow.sdk.serde import deserialize, serialize

    from cdcgen.airflow.triggers import ClockPastTrigger

    trigger = ClockPastTrigger(
        target_ms=TS_MS + 5000,
        source=SOURCE,
        timeout_seconds=30.0,
        subject="generation 2026-09-21T14:13:20.000+00:00 (g)",
        poll_interval=0.5,
    )
    classpath, kwargs = trigger.serialize()
    assert classpath == "cdcgen.airflow.triggers.ClockPastTrigger"
    # What the triggerer does: kwargs go through Airflow's serde, then the class is rebuilt.
    rebuilt = import_string(classpath)(**deserialize(serialize(kwargs)))
    assert rebuilt.serialize() == (classpath, kwargs)


class _FakeHook:
    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def get_config(self, **overrides: Any) -> Any:
        from cdcgen.airflow.triggers import config_from_clock_settings

        return config_from_clock_settings(SOURCE).with_overrides(
            generation_leeway=timedelta(seconds=5),
            clock_wait_timeout=timedelta(seconds=42),
            username="reader",
            password="s3cret-pw",
            tls_ca_file="/etc/cdc/ca.pem",
        )


def _clocks(*offsets: float | None) -> list[NodeClock]:
    """Node clocks at generation timestamp + offset seconds (None: unreachable)."""
    base = datetime.fromtimestamp(TS_MS / 1000, tz=UTC)
    return [
        NodeClock(f"10.0.0.{i + 1}", None, "timed out")
        if off is None
        else NodeClock(f"10.0.0.{i + 1}", base + timedelta(seconds=off))
        for i, off in enumerate(offsets)
    ]


@pytest.fixture
def sensor(monkeypatch: pytest.MonkeyPatch) -> Any:
    from cdcgen.airflow import sensors

    monkeypatch.setattr(sensors, "CdcSourceHook", _FakeHook)
    generation = Generation(from_millis(TS_MS), "g")
    return sensors.GenerationStartedSensor(task_id="wait", generation=to_xcom(generation))


def test_sensor_defers_while_a_node_lags(sensor: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk.exceptions import TaskDeferred

    from cdcgen.airflow import sensors
    from cdcgen.airflow.triggers import ClockPastTrigger

    # Node 2 is past T but not past T + leeway (5 s): the generation may still get writes.
    monkeypatch.setattr(sensors, "read_clocks_once", lambda _config: _clocks(10, 4.5))
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(context={})
    trigger = deferred.value.trigger
    assert isinstance(trigger, ClockPastTrigger)
    assert trigger.target_ms == TS_MS + 5000  # T + leeway (core.clocks.generation_started_at)
    assert trigger.subject == "generation 2026-09-21T14:13:20.000+00:00 (g)"
    assert trigger.timeout_seconds == 42.0
    # The connection's TLS settings travel; its credentials do not (trigger kwargs are
    # stored in the metadata DB): the triggerer reads them from the connection by id.
    assert trigger.source == {
        **SOURCE,
        "conn_id": "cdc_source",
        "tls": True,
        "tls_ca_file": "/etc/cdc/ca.pem",
        "tls_verify_hostname": True,
    }
    stored = json.dumps(trigger.serialize())
    assert "s3cret-pw" not in stored and "reader" not in stored
    assert deferred.value.method_name == "execute_complete"


def test_sensor_does_not_defer_once_every_clock_passed(
    sensor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cdcgen.airflow import sensors

    monkeypatch.setattr(sensors, "read_clocks_once", lambda _config: _clocks(6, 5.0))
    assert sensor.execute(context={})["target"] == from_millis(TS_MS + 5000).isoformat()


def test_sensor_fails_naming_the_nodes_without_a_retry(sensor: Any) -> None:
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    event = {
        "status": "timeout",
        "message": "... node 10.0.0.2 unreachable (timed out)",
        "lagging": [{"node": "10.0.0.2", "clock": None, "error": "timed out"}],
    }
    with pytest.raises(AirflowFailException, match=r"10\.0\.0\.2 unreachable"):
        sensor.execute_complete(context={}, event=event)
    with pytest.raises(AirflowException, match="without an event"):
        sensor.execute_complete(context={}, event=None)
    ok = {"status": "started", "target": "t", "clocks": {}}
    assert sensor.execute_complete(context={}, event=ok) == {"target": "t"}
