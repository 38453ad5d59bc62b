"""A run's Params read once (cdcgen.airflow.run_params): empty or missing values are the
defaults the task bodies always took, a Param another DAG declares is ignored."""

from __future__ import annotations

import pydantic
import pytest

from cdcgen.airflow.run_params import RunParams, run_params


def test_no_params_are_the_defaults() -> None:
    for given in (None, {}):
        params = run_params(given)
        assert params == RunParams()
        assert (params.generation_id, params.force, params.lake_path) == ("", False, "")
        assert (params.tables, params.sink_keyspace) == ("", "")
        assert (params.mode, params.dry_run) == ("apply", False)


def test_empty_or_null_values_read_as_the_defaults() -> None:
    given = {
        "generation_id": None,
        "force": None,
        "lake_path": "",
        "tables": None,
        "sink_keyspace": None,
        "mode": "",
        "dry_run": 0,
    }
    assert run_params(given) == RunParams()
    assert run_params({"mode": None}).mode == "apply"


def test_values_are_read_as_text_and_flags() -> None:
    params = run_params(
        {
            "generation_id": 1_790_000_000_000,
            "force": True,
            "lake_path": "/lake/run",
            "tables": "shop.orders,shop.items",
            "sink_keyspace": "dr",
            "mode": "bootstrap",
            "dry_run": 1,
        }
    )
    assert params.generation_id == "1790000000000"
    assert params.force is True and params.dry_run is True
    assert (params.lake_path, params.tables) == ("/lake/run", "shop.orders,shop.items")
    assert (params.sink_keyspace, params.mode) == ("dr", "bootstrap")


def test_a_param_no_field_reads_is_ignored_and_the_value_cannot_change() -> None:
    params = run_params({"tables": "shop.orders", "another_dag_s_param": 3})
    assert params.tables == "shop.orders"
    with pytest.raises(pydantic.ValidationError):
        params.tables = "shop.items"  # type: ignore[misc]
