"""Every mapped task of the DAGs is named in the grid by its table or generation
(cdcgen.airflow.map_index), through the DAG's own template environment."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from airflow.sdk import DAG

from cdcgen.airflow import map_index
from cdcgen.airflow.dag_factories import cdc_changes_dag, cdc_generations_dag, cdc_replication_dag
from cdcgen.airflow.xcom import to_xcom
from cdcgen.core.generation import Generation
from cdcgen.core.time import from_millis

GENERATION = Generation(from_millis(1_767_225_660_000), "c0ffee00-0000-1000-8000-000000000001")
STREAM_SET = Generation(from_millis(1_767_225_660_000), "7a61", "shop.orders")

#: Per DAG: its mapped group and what each of its tasks is given by the group.
MAPPED = {
    "cdc_generations": ("generation", ("generation", to_xcom(GENERATION))),
    "cdc_changes": ("table", ("table", "shop.orders")),
    "cdc_replication": ("table", ("table", "shop.orders")),
}
EXPECTED = {"cdc_generations": "2026-01-01T00:01:00.000+00:00", "cdc_changes": "shop.orders"}


def built() -> list[DAG]:
    return [cdc_generations_dag(), cdc_changes_dag(), cdc_replication_dag()]


def given(task: Any, name: str, value: Any) -> Any:
    """``task`` as it runs: the group's argument ``name``, which it must be given,
    resolved to ``value``."""
    task = copy.copy(task)
    if isinstance(getattr(task, "op_kwargs", None), dict):
        assert task.op_kwargs.get(name) is not None, f"{task.task_id} is not given {name}"
        task.op_kwargs = {**task.op_kwargs, name: value}
    else:
        assert getattr(task, name, None) is not None, f"{task.task_id} is not given {name}"
        setattr(task, name, value)
    return task


def rendered(dag: DAG, task: Any) -> str:
    assert task.map_index_template is not None, f"{dag.dag_id}.{task.task_id} has no template"
    environment = dag.get_template_env()
    return str(environment.from_string(task.map_index_template).render(task=task))


@pytest.mark.parametrize("dag", built(), ids=lambda dag: dag.dag_id)
def test_each_mapped_task_renders_its_table_or_generation_in_the_dag_s_environment(
    dag: DAG,
) -> None:
    group, (name, value) = MAPPED[dag.dag_id]
    mapped = [t for t in dag.tasks if t.task_id.startswith(f"{group}.")]
    assert len(mapped) >= 2, [t.task_id for t in dag.tasks]
    expected = EXPECTED.get(dag.dag_id, "shop.orders")
    for task in mapped:
        assert rendered(dag, given(task, name, value)) == expected, task.task_id
    # The tasks outside the mapped group keep Airflow's default.
    assert all(t.map_index_template is None for t in dag.tasks if t not in mapped)


def test_a_tablets_stream_set_is_named_by_its_table_then_its_timestamp() -> None:
    assert map_index.generation_label(to_xcom(STREAM_SET)) == (
        "shop.orders 2026-01-01T00:01:00.000+00:00"
    )


def test_a_task_given_neither_keeps_its_index() -> None:
    class Bare:
        def __init__(self) -> None:
            self.op_kwargs: dict[str, Any] = {}

    assert map_index.map_label(Bare()) == ""
