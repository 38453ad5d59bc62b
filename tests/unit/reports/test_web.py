"""The report app the Airflow plugin mounts, and the plugin's declarations."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cdcgen.reports.records import generation_page_name
from cdcgen.reports.sample import sample_generation
from cdcgen.reports.site import record_run, save_record
from cdcgen.reports.web import URL_PREFIX, LazyApp, create_app, resolve_file

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    return TestClient(create_app(lambda: tmp_path, require_login=False))


def files(report_dir: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry under ``report_dir`` with its inode, modification time and size."""
    return {
        str(p.relative_to(report_dir)): (s.st_ino, s.st_mtime_ns, s.st_size)
        for p in report_dir.rglob("*")
        for s in [p.lstat()]
    }


def test_the_index_shows_records_newer_than_it_without_writing_a_file(
    client: TestClient, tmp_path: Path
) -> None:
    first = client.get("/")
    assert first.status_code == 200
    assert "No run has been recorded yet." in first.text
    assert files(tmp_path) == {}
    record_run(tmp_path, sample_generation(T0, vnodes=2, seed=1), keep_runs=10)
    assert "generation 2026-11-01 12:00:00.000Z" in client.get("/").text  # the task's page
    later = sample_generation(T0 + timedelta(hours=1), vnodes=2, seed=2)
    save_record(tmp_path, later)  # saved; its task has not rendered the pages yet
    before = files(tmp_path)
    assert "generation 2026-11-01 13:00:00.000Z" in client.get("/").text
    assert (
        client.get(f"/runs/{later.dag_id}/{later.run_id}", follow_redirects=False).status_code
        == 307
    )
    assert client.get("/index.html").status_code == 200
    assert files(tmp_path) == before  # a request wrote, renamed and removed nothing


def test_a_dag_run_redirects_to_its_generation_page(client: TestClient, tmp_path: Path) -> None:
    record = sample_generation(T0, vnodes=2)
    record_run(tmp_path, record)
    response = client.get(f"/runs/{record.dag_id}/{record.run_id}", follow_redirects=False)
    assert response.status_code == 307
    location = response.headers["location"]
    assert location.startswith(f"{URL_PREFIX}/generations/")
    assert location.endswith(generation_page_name(record).replace("+", "%2B"))
    page = client.get(location.removeprefix(URL_PREFIX))
    assert page.status_code == 200
    assert "<h2>Ring</h2>" in page.text


def test_an_unknown_run_says_so(client: TestClient) -> None:
    response = client.get("/runs/cdc_generations/manual__nothing")
    assert response.status_code == 200
    assert "No report has been recorded" in response.text


def test_files_outside_the_report_dir_are_not_served(client: TestClient, tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.html").write_text("<p>data docs</p>")
    assert client.get("/docs/").text == "<p>data docs</p>"
    assert client.get("/docs/../../etc/passwd").status_code == 404
    assert resolve_file(tmp_path, "../../etc/passwd") is None
    assert client.get("/missing.html").status_code == 404


def test_a_link_named_index_html_never_leads_out_of_the_folder(
    client: TestClient, tmp_path: Path
) -> None:
    secret = tmp_path.parent / f"{tmp_path.name}-secret.cfg"
    secret.write_text("fernet_key = SECRET")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.html").symlink_to(secret)  # planted by a task
    for path in ("/docs", "/docs/", "/docs/index.html"):
        response = client.get(path)
        assert response.status_code == 404 and "SECRET" not in response.text, path
    (tmp_path / "index.html").symlink_to(secret)  # and as the site's own index
    response = client.get("/")
    assert response.status_code == 200 and "SECRET" not in response.text
    assert "No run has been recorded yet." in response.text  # rendered in the response
    assert secret.read_text() == "fernet_key = SECRET"  # the link neither followed
    assert (tmp_path / "index.html").is_symlink()  # nor written through by a request
    record_run(tmp_path, sample_generation(T0, vnodes=2), keep_runs=10)
    assert not (tmp_path / "index.html").is_symlink()  # a task's save replaces the link
    assert secret.read_text() == "fernet_key = SECRET"
    assert "generation 2026-11-01" in client.get("/").text


def test_a_link_named_index_html_inside_the_folder_is_not_served_as_the_index(
    client: TestClient, tmp_path: Path
) -> None:
    """The index's readers are not those of the page a link would lead to."""
    (tmp_path / "changes.html").write_text("<p>CHANGES PAGE</p>")
    (tmp_path / "index.html").symlink_to(tmp_path / "changes.html")  # planted by a task
    response = client.get("/")
    assert response.status_code == 200 and "CHANGES PAGE" not in response.text
    assert "No run has been recorded yet." in response.text


@pytest.mark.parametrize(
    "path",
    [
        "docs/%00",
        "docs/index.html%00.png",
        "%00",
        "docs/%0aindex.html",
        "x" * 5000,
        ".cdcgen-data-docs",
        "docs/.cdcgen-data-docs",
        ".env",
        "runs/.r.json.partial",
        "docs/..%2f..%2fetc%2fpasswd",
        "hidden/index.html",
    ],
)
def test_hostile_paths_get_a_404_never_a_500_nor_a_hidden_file(
    client: TestClient, tmp_path: Path, path: str
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.html").write_text("<p>data docs</p>")
    for hidden in (tmp_path / ".env", tmp_path / "docs" / ".cdcgen-data-docs"):
        hidden.write_text("SECRET=1")
    (tmp_path / ".cdcgen-data-docs").write_text("marker")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / ".r.json.partial").write_text("{}")
    (tmp_path / ".secret").mkdir()
    (tmp_path / "hidden").symlink_to(tmp_path / ".secret")  # a link to a hidden folder
    (tmp_path / ".secret" / "index.html").write_text("SECRET")
    response = client.get(f"/{path}")
    assert response.status_code == 404, response.text
    assert "SECRET" not in response.text


def test_lazy_app_builds_the_real_app_once() -> None:
    built: list[int] = []

    async def app(scope: object, receive: object, send: object) -> None:
        built.append(1)

    lazy = LazyApp(lambda: (built.append(0), app)[1])

    async def call_twice() -> None:
        for _ in range(2):
            await lazy({}, None, None)  # type: ignore[arg-type]

    asyncio.run(call_twice())
    assert built == [0, 1, 1]


def test_plugin_declarations_match_airflows_models() -> None:
    from airflow.api_fastapi.core_api.datamodels.plugins import ExternalViewResponse

    from cdcgen.airflow.reports_plugin import CdcgenReportsPlugin as plugin

    assert plugin.name == "cdcgen_reports"
    (app,) = plugin.fastapi_apps
    assert app["url_prefix"] == URL_PREFIX
    views = [ExternalViewResponse.model_validate(v) for v in plugin.external_views]
    assert {v.destination for v in views} == {"nav", "dag_run"}
    run_view = next(v for v in views if v.destination == "dag_run")
    assert run_view.href == f"{URL_PREFIX}/runs/{{DAG_ID}}/{{RUN_ID}}"
    assert all(v.url_route and not v.url_route.startswith("/") for v in views)
