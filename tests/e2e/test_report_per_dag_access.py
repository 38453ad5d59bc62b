"""Who may read which report, inside Airflow's own API server (issue 35).

A page is authorised by the DAG whose runs it shows, decided from the page's path and
nothing else the request says: with per-DAG grants (a team's DAGs), reading one DAG
must not unlock another DAG's pages, nor the index that lists them all. The auth
manager here is a real Airflow one (SimpleAuthManager's tokens and users) that grants
each user exactly the DAGs :data:`GRANTS` names, the way a deployment's per-team roles
do; the app is the API server's, with the plugin mounted as in production.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

from cdcgen.reports.owners import CHANGES_DAG, EVERY_DAG, GENERATIONS_DAG, REPLICATION_DAG
from cdcgen.reports.records import GenerationReport, generation_page_name
from cdcgen.reports.sample import write_sample_site
from cdcgen.reports.site import load_records
from cdcgen.reports.web import URL_PREFIX

#: Per user, the DAGs it may read; nothing else (no other DAG, no DAG-less "every DAG").
GRANTS: dict[str, frozenset[str]] = {
    "team_x": frozenset({"team_x_dag"}),
    "generations_only": frozenset({GENERATIONS_DAG}),
    "changes_only": frozenset({CHANGES_DAG}),
    "replication_only": frozenset({REPLICATION_DAG}),
    "generations_and_changes": frozenset({GENERATIONS_DAG, CHANGES_DAG}),
    "every_dag": EVERY_DAG,
}


class GrantsAuthManager(SimpleAuthManager):
    """SimpleAuthManager whose users may read the DAGs :data:`GRANTS` gives them, only."""

    def init(self) -> None:
        """No generated passwords file (nor printed passwords): the tests sign tokens."""

    def is_authorized_dag(
        self,
        *,
        method: Any,
        user: SimpleAuthManagerUser,
        access_entity: DagAccessEntity | None = None,
        details: DagDetails | None = None,
    ) -> bool:
        dag_id = details.id if details is not None else None
        return method == "GET" and dag_id in GRANTS.get(user.username, frozenset())


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample site (generations, changes, replication) and each DAG's Data Docs."""
    root = tmp_path_factory.mktemp("reports")
    write_sample_site(root)
    for docs in ("generation_ts=1795334400005", "table=shop.orders/generation_ts=1"):
        (root / docs).mkdir(parents=True)
        (root / docs / "index.html").write_text("<p>generation data docs</p>")
    checks = root / "changes" / "shop.orders" / "scheduled__1"
    checks.mkdir(parents=True)
    (checks / "checks.html").write_text("<p>changes checks</p>")
    for work in ("summaries", "changes-results/r1", "validate-x"):
        (root / work).mkdir(parents=True)
        (root / work / "index.html").write_text("<p>not a DAG's report page</p>")
    (root / "somewhere-else.html").write_text("<p>no DAG wrote this</p>")
    return root


@pytest.fixture(scope="module")
def server(airflow_template_home: Path, site: Path) -> Iterator[Any]:
    """Airflow's API server app (plugins mounted) with :class:`GrantsAuthManager`."""
    from airflow.api_fastapi.app import create_app, purge_cached_app
    from fastapi.testclient import TestClient

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRFLOW__CORE__AUTH_MANAGER", f"{__name__}.GrantsAuthManager")
        patch.setenv("CDCGEN_REPORT_DIR", str(site))
        purge_cached_app()
        try:
            app = create_app("core")
            assert type(app.state.auth_manager) is GrantsAuthManager
            with TestClient(app) as client:
                yield client
        finally:
            purge_cached_app()  # the next module's auth manager is the home's own again


def as_user(username: str) -> dict[str, str]:
    from airflow.api_fastapi.app import get_auth_manager

    user = SimpleAuthManagerUser(username=username, role=None)
    return {"Authorization": f"Bearer {get_auth_manager().generate_jwt(user)}"}


def get(server: Any, user: str, path: str, **kwargs: Any) -> Any:
    return server.get(f"{URL_PREFIX}/{path}", headers=as_user(user), **kwargs)


def a_generation(site: Path) -> GenerationReport:
    records, _ = load_records(site, rings=False)
    return next(r for r in records if isinstance(r, GenerationReport))


def pages_of(site: Path) -> dict[str, list[str]]:
    """Per DAG, report files it alone owns."""
    return {
        GENERATIONS_DAG: [
            f"generations/{generation_page_name(a_generation(site))}",
            "generation_ts=1795334400005/",
            "table=shop.orders/generation_ts=1/index.html",
        ],
        CHANGES_DAG: ["changes.html", "changes/shop.orders/scheduled__1/checks.html"],
        REPLICATION_DAG: ["replication.html"],
    }


@pytest.mark.parametrize(
    ("user", "dag_id"),
    [
        ("generations_only", GENERATIONS_DAG),
        ("changes_only", CHANGES_DAG),
        ("replication_only", REPLICATION_DAG),
    ],
)
def test_one_dags_reader_reads_its_pages_and_no_other_dags(
    server: Any, site: Path, user: str, dag_id: str
) -> None:
    for owner, paths in pages_of(site).items():
        for path in paths:
            status = get(server, user, path).status_code
            assert status == (200 if owner == dag_id else 403), (user, path, status)
    for index in ("", "index.html"):  # the index lists every DAG's runs
        assert get(server, user, index).status_code == 403, index


def test_a_query_string_never_changes_the_decision(server: Any, site: Path) -> None:
    generation = f"generations/{generation_page_name(a_generation(site))}"
    for query in ("?dag_id=team_x_dag", "?dag_id=~", "?dag_id=cdc_changes&dag_id=team_x_dag"):
        for path in ("", "index.html", "changes.html", generation):
            response = get(server, "team_x", path + query)
            assert response.status_code == 403, (path + query, response.status_code)
            assert "cdcgen" not in response.text
    own = "?dag_id=cdc_generations"
    assert get(server, "generations_only", f"changes.html{own}").status_code == 403
    assert get(server, "generations_only", own).status_code == 403
    assert get(server, "generations_only", f"runs/cdc_changes/r1{own}").status_code == 403


def test_the_index_needs_every_dag_it_lists(server: Any) -> None:
    assert get(server, "generations_and_changes", "").status_code == 403
    for index in ("", "index.html"):
        response = get(server, "every_dag", index)
        assert response.status_code == 200 and "cdcgen runs" in response.text, index


def test_a_runs_tab_opens_its_page_for_a_reader_of_its_dag_only(server: Any, site: Path) -> None:
    record = a_generation(site)
    path = f"runs/{record.dag_id}/{record.run_id}"
    response = get(server, "generations_only", path, follow_redirects=False)
    assert response.status_code == 307
    page = server.get(response.headers["location"], headers=as_user("generations_only"))
    assert page.status_code == 200 and "<h2>Ring</h2>" in page.text
    assert get(server, "changes_only", path).status_code == 403


@pytest.mark.parametrize(
    "path",
    [
        "runs/RECORD",  # the records pages are rendered from, not a page
        "runs/rings/",
        "replication/",
        "summaries/",  # work files of running tasks
        "changes-results/r1/",
        "validate-x/",  # a validation the CLI ran, no DAG's
        "somewhere-else.html",
        "generations/..%2F..%2Fetc%2Fpasswd",
    ],
)
def test_a_file_no_dag_owns_is_refused_even_to_a_reader_of_every_dag(
    server: Any, site: Path, path: str
) -> None:
    record = next((site / "runs").glob("*.json")).name
    response = get(server, "every_dag", path.replace("RECORD", record))
    assert response.status_code == 404, (path, response.status_code)
    assert response.json() == {"detail": "no DAG owns this report path"}


def test_a_path_is_judged_by_the_file_it_names_not_by_how_it_starts(
    server: Any, site: Path
) -> None:
    """``generations/../changes.html`` names the changes page (which no ``..`` path is
    served as); a link a task planted in the generations folder is the page it leads to."""
    sneaky = "generations%2F..%2Fchanges.html"
    assert get(server, "generations_only", sneaky).status_code == 403
    assert get(server, "changes_only", sneaky).status_code == 404
    planted = site / "generations" / "planted.html"
    planted.symlink_to(site / "replication.html")
    try:
        assert get(server, "generations_only", "generations/planted.html").status_code == 403
        assert get(server, "every_dag", "generations/planted.html").status_code == 200
    finally:
        planted.unlink()


def test_no_token_is_a_401_whatever_the_page(server: Any) -> None:
    for path in ("", "changes.html", "runs/x.json", "runs/cdc_changes/r1", "nowhere.html"):
        assert server.get(f"{URL_PREFIX}/{path}").status_code == 401, path
