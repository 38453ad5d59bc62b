"""Which DAG owns which report file: the rule the report view authorises by."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cdcgen.reports.owners import (
    CHANGES_DAG,
    EVERY_DAG,
    GENERATIONS_DAG,
    REPLICATION_DAG,
    owners,
)
from cdcgen.reports.web import file_owners
from cdcgen_dev.paths import REPO_ROOT

GEN, CHG, REP = frozenset({GENERATIONS_DAG}), frozenset({CHANGES_DAG}), frozenset({REPLICATION_DAG})


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("", EVERY_DAG),
        (".", EVERY_DAG),
        ("index.html", EVERY_DAG),
        ("./index.html", EVERY_DAG),
        ("index-2.html", EVERY_DAG),  # the index's later pages
        ("index-12.html", EVERY_DAG),
        ("changes.html", CHG),
        ("changes/shop.orders/scheduled__1/checks.html", CHG),
        ("changes/shop.orders/scheduled__1/", CHG),
        ("replication.html", REP),
        ("generations/20261101T090000000000Z-x.html", GEN),
        ("generation_ts=1795334400005", GEN),
        ("generation_ts=1795334400005/validations/x.html", GEN),
        ("table=shop.orders/generation_ts=1/index.html", GEN),
        ("generations/../changes.html", CHG),
        ("generations//./../replication.html", REP),
    ],
)
def test_a_page_belongs_to_the_dag_whose_runs_it_shows(path: str, expected: frozenset[str]) -> None:
    assert owners(path) == expected


@pytest.mark.parametrize(
    "path",
    [
        "runs/changes-20261101T120000000000Z-r.json",  # records: input, not pages
        "runs/rings/abc.json",
        "replication/replica.orders/x.json",
        "summaries/r1.json",  # work files of running tasks
        "summaries/changes/r1.json",
        "changes-results/r1/shop.orders.json",
        "validate-x/index.html",  # the CLI's, no DAG's
        "docs/index.html",
        "changes.html/x",
        "Generations/x.html",
        "generation_ts=",
        "table=/x",
        "index-1.html",  # page 1 is index.html
        "index-02.html",
        "index-x.html",
        "index-.html",
        "index-2.html/x",
        "..",
        "../reports/changes.html",
        "generations/../../etc/passwd",
        "/etc/passwd",
        "//changes.html",
    ],
)
def test_a_file_no_dag_owns_has_no_owner(path: str) -> None:
    assert owners(path) is None


def test_a_link_is_owned_by_both_ends(tmp_path: Path) -> None:
    """A task can plant a link: whoever opens it must be allowed to read what it shows."""
    (tmp_path / "generations").mkdir()
    (tmp_path / "runs").mkdir()
    (tmp_path / "replication.html").write_text("<p>replication</p>")
    (tmp_path / "runs" / "r.json").write_text("{}")
    (tmp_path / "generations" / "page.html").write_text("<p>generation</p>")
    (tmp_path / "generations" / "to-replication.html").symlink_to(tmp_path / "replication.html")
    (tmp_path / "generations" / "to-record.json").symlink_to(tmp_path / "runs" / "r.json")
    assert file_owners(tmp_path, "generations/page.html") == GEN
    assert file_owners(tmp_path, "generations/to-replication.html") == GEN | REP
    assert file_owners(tmp_path, "generations/to-record.json") is None
    assert file_owners(tmp_path, "generations/missing.html") == GEN  # the route's 404
    assert file_owners(tmp_path, "runs/r.json") is None


def test_generation_data_docs_folders_are_named_as_the_lake_labels_them() -> None:
    from cdcgen.generation_lake.lake_tables import PARTITION_PREFIX, TABLE_PREFIX

    assert owners(f"{PARTITION_PREFIX}1795334400005/index.html") == GEN
    assert owners(f"{TABLE_PREFIX}shop.orders/{PARTITION_PREFIX}1/index.html") == GEN


def test_the_owners_are_the_dags_of_the_dags_folder() -> None:
    """A renamed DAG would lock every reader out of its reports: keep the names in step.
    ``dags/`` builds each default DAG with its factory's default id."""
    import inspect

    from cdcgen.airflow import dag_factories

    factories = {
        name: getattr(dag_factories, name)
        for name in dag_factories.__all__
        if name.endswith("_dag")
    }
    dag_ids = set()
    for path in (REPO_ROOT / "dags").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in factories:
                assert not any(k.arg == "dag_id" for k in node.keywords), path
                factory = factories[node.func.id]  # type: ignore[attr-defined]
                dag_ids.add(inspect.signature(factory).parameters["dag_id"].default)
    assert dag_ids >= EVERY_DAG, EVERY_DAG - dag_ids
