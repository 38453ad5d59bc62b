"""The DAG factories' shared pieces (cdcgen.airflow.dag_factories.shared): every DAG's Params and
task defaults as the trigger form and the scheduler see them, each shared one written
once, and every Param a field the task bodies read (RunParams)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from airflow.sdk import DAG

from cdcgen.airflow.alerts import AlertNotifier
from cdcgen.airflow.dag_factories import (
    cdc_changes_dag,
    cdc_generations_dag,
    cdc_generations_maintenance_dag,
    cdc_replication_dag,
)
from cdcgen.airflow.dag_factories.shared import LAKE_PATH_RULE, START_DATE
from cdcgen.airflow.run_params import RunParams

LAKE_RULE = (
    "; empty: CDCGEN_LAKE_PATH or lake/. Absolute, inside CDCGEN_LAKE_PATH or a "
    "CDCGEN_LAKE_ROOTS root."
)

#: Each DAG's Params: (default, schema, description), as the factories always built them.
PARAMS: dict[str, dict[str, tuple[Any, dict[str, Any], str]]] = {
    "cdc_generations": {
        "generation_id": (
            "",
            {"title": "Generation", "type": "string"},
            "Only this generation (source id, ISO timestamp or ms); empty: all.",
        ),
        "force": (
            False,
            {"title": "Force re-publish", "type": "boolean"},
            "Also re-publish generations that are already published.",
        ),
        "lake_path": (
            "",
            {"title": "Lake path", "type": "string"},
            "Where the extract job writes" + LAKE_RULE,
        ),
    },
    "cdc_generations_maintenance": {},
    "cdc_changes": {
        "tables": (
            "",
            {"title": "Tables", "type": "string"},
            "keyspace.table[,...]; empty: the connection's cdc_tables, else every "
            "CDC-enabled table.",
        ),
        "lake_path": (
            "",
            {"title": "Lake path", "type": "string"},
            "Where the changes go" + LAKE_RULE,
        ),
    },
    "cdc_replication": {
        "tables": (
            "",
            {"title": "Tables", "type": "string"},
            "keyspace.table[,...] among the sink connection's replicated_tables; empty: "
            "all of them.",
        ),
        "sink_keyspace": (
            "",
            {"title": "Sink keyspace", "type": "string"},
            "Where the tables go (same names): one of the connection's sink_keyspace list; "
            "empty: its first.",
        ),
        "mode": (
            "apply",
            {"enum": ["apply", "bootstrap", "bootstrap-replace"], "title": "Mode"},
            "bootstrap: copy the source first (the sink table must be empty); "
            "bootstrap-replace: truncate the sink table, then copy.",
        ),
        "dry_run": (
            False,
            {"title": "Dry run", "type": "boolean"},
            "Check everything and say what the run would do (which table a bootstrap would "
            "truncate, which range it would apply); write nothing.",
        ),
    },
}

#: Each DAG's task defaults: retries and their delay.
RETRIES = {
    "cdc_generations": (0, timedelta(seconds=10)),
    "cdc_generations_maintenance": (2, timedelta(minutes=1)),
    "cdc_changes": (0, timedelta(seconds=30)),
    "cdc_replication": (2, timedelta(seconds=30)),
}


@pytest.fixture(scope="module")
def dags() -> dict[str, DAG]:
    built = [
        cdc_generations_dag(),
        cdc_generations_maintenance_dag(),
        cdc_changes_dag(),
        cdc_replication_dag(),
    ]
    return {dag.dag_id: dag for dag in built}


def test_every_dag_s_params_are_the_ones_its_trigger_form_always_showed(
    dags: dict[str, DAG],
) -> None:
    for dag_id, expected in PARAMS.items():
        params = dags[dag_id].params
        shown = {name: (p.value, p.schema, p.description) for name, p in params.items()}
        assert shown == expected, dag_id
        assert list(shown) == list(expected), dag_id  # the form's order


def test_the_lake_and_tables_params_share_their_wording() -> None:
    assert LAKE_RULE.removeprefix("; ") == LAKE_PATH_RULE
    lakes = [PARAMS[d]["lake_path"] for d in ("cdc_generations", "cdc_changes")]
    tables = [PARAMS[d]["tables"] for d in ("cdc_changes", "cdc_replication")]
    assert all(description.endswith(LAKE_RULE) for _, _, description in lakes)
    assert all(description.startswith("keyspace.table[,...]") for _, _, description in tables)


def test_every_param_is_a_field_of_the_run_s_params_with_its_default() -> None:
    defaults = RunParams()
    for dag_id, params in PARAMS.items():
        for name, (default, _, _) in params.items():
            assert name in RunParams.model_fields, (dag_id, name)
            assert getattr(defaults, name) == default, (dag_id, name)


def test_every_dag_s_tasks_default_to_its_retries_and_the_alert_notifier(
    dags: dict[str, DAG],
) -> None:
    for dag_id, (retries, delay) in RETRIES.items():
        dag = dags[dag_id]
        assert dag.start_date == START_DATE and dag.catchup is False, dag_id
        assert dag.max_active_runs == 1, dag_id
        args = dag.default_args
        assert set(args) == {"retries", "retry_delay", "on_failure_callback"}, dag_id
        assert (args["retries"], args["retry_delay"]) == (retries, delay), dag_id
        (notifier,) = args["on_failure_callback"]
        assert isinstance(notifier, AlertNotifier), dag_id
        assert notifier.webhook_conn_id == "cdcgen_alerts", dag_id


def test_every_wait_that_defers_has_a_retry_left_for_the_resumed_deferral_race(
    dags: dict[str, DAG],
) -> None:
    """A DAG default of no retries must not reach the waits: Airflow may fail a resumed
    deferral from outside (cdcgen.airflow.sensors), and only a retry saves the run."""
    from cdcgen.airflow.sensors import WAIT_RETRIES, ClockPastSensor

    waits = [
        (dag_id, task)
        for dag_id, dag in dags.items()
        for task in dag.tasks
        if isinstance(task, ClockPastSensor)
    ]
    assert {dag_id for dag_id, _ in waits} == {"cdc_generations", "cdc_changes"}
    for dag_id, task in waits:
        assert task.deferrable, (dag_id, task.task_id)
        assert task.retries == WAIT_RETRIES >= 1, (dag_id, task.task_id)
