"""Typed records in and out of XCom (cdcgen.airflow.xcom): the JSON each task hands on, as
the mapped groups' ``expand_kwargs`` and the other tasks read it, and back."""

from __future__ import annotations

from datetime import UTC, datetime

from cdcgen.airflow.generation_steps import PlannedGeneration
from cdcgen.airflow.replication_steps import PlannedReplication
from cdcgen.airflow.xcom import from_xcom, list_or_none_from_xcom, to_xcom
from cdcgen.core.generation import Generation
from cdcgen.pipeline.maintenance import Expiry, RewriteSkipped, Vacuum

GENERATION = Generation(datetime(2026, 11, 1, 9, 0, tzinfo=UTC), "6f1c2e40", "shop.orders")
ENV = {"CDCGEN_LAKE_PATH": "/lake", "PYSPARK_PYTHON": "/usr/bin/python3"}


class OwnForm:
    def to_json(self) -> dict[str, object]:
        return {"status": "ok", "lake_versions": [3]}


def test_a_planned_generation_is_the_mapping_its_task_group_is_expanded_with() -> None:
    planned = PlannedGeneration(GENERATION, ("--generation-ts-ms", "1793523600000"), ENV)
    sent = to_xcom([planned])
    assert sent == [
        {
            "generation": {
                "timestamp": "2026-11-01T09:00:00Z",
                "id": "6f1c2e40",
                "table": "shop.orders",
            },
            "spark_args": ["--generation-ts-ms", "1793523600000"],
            "env_vars": ENV,
        }
    ]
    assert sent[0]["generation"] == to_xcom(GENERATION)  # what the wait and extract read
    assert list_or_none_from_xcom(PlannedGeneration, sent) == [planned]


def test_a_planned_table_is_the_mapping_its_task_group_is_expanded_with() -> None:
    planned = [
        PlannedReplication("shop.orders", ("--table", "shop.orders"), ENV),
        PlannedReplication("shop.items", (), ENV),
    ]
    sent = to_xcom(planned)
    assert sent == [
        {"table": "shop.orders", "spark_args": ["--table", "shop.orders"], "env_vars": ENV},
        {"table": "shop.items", "spark_args": [], "env_vars": ENV},
    ]
    assert list_or_none_from_xcom(PlannedReplication, sent) == planned


def test_no_upstream_result_stays_none_and_an_empty_one_empty() -> None:
    assert list_or_none_from_xcom(PlannedGeneration, None) is None
    assert list_or_none_from_xcom(PlannedGeneration, []) == []


def test_a_record_with_a_json_form_of_its_own_goes_out_in_it() -> None:
    assert to_xcom(OwnForm()) == {"status": "ok", "lake_versions": [3]}
    assert to_xcom([OwnForm()]) == [{"status": "ok", "lake_versions": [3]}]


def test_the_maintenance_tasks_results_keep_their_json() -> None:
    skipped = RewriteSkipped(status="skipped: the source is in raft mode, not v1")
    assert to_xcom(skipped) == {"status": "skipped: the source is in raft mode, not v1"}
    expiry = Expiry(cdc_tables=2, expired={"2026-11-01T09:00:00+00:00": "x"}, pruned=("a",))
    assert to_xcom(expiry) == {
        "cdc_tables": 2,
        "expired": {"2026-11-01T09:00:00+00:00": "x"},
        "pruned": ["a"],
    }
    unpruned = Expiry(cdc_tables=2, expired={}, pruned="not configured")
    assert to_xcom(unpruned)["pruned"] == "not configured"
    vacuum = Vacuum(retention_hours=168, removed_files={"generations": 2}, not_delta=("old",))
    assert to_xcom(vacuum) == {
        "retention_hours": 168,
        "removed_files": {"generations": 2},
        "not_delta": ["old"],
    }
    assert from_xcom(Vacuum, to_xcom(vacuum)) == vacuum
