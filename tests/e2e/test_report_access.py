"""The report view inside Airflow checks a permission, not only a login: reading DAG runs
(with Airflow's own auth manager and tokens, on a migrated metadata DB)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdcgen.reports.web import create_app


@pytest.fixture
def client(airflow_template_home: Path, tmp_path: Path) -> Any:
    from fastapi.testclient import TestClient

    (tmp_path / "index.html").write_text("<p>every run</p>")
    (tmp_path / "runs").mkdir()
    return TestClient(create_app(lambda: tmp_path))


def token(role: str | None) -> str:
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    return str(get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="u", role=role)))


def test_reports_need_a_user_who_may_read_dag_runs(client: Any) -> None:
    from airflow.api_fastapi.app import create_auth_manager

    create_auth_manager()  # the API server's own (SimpleAuthManager in this home)
    assert client.get("/index.html").status_code == 401  # no token
    signed_in = {"Authorization": f"Bearer {token(None)}"}  # a user with no role
    assert client.get("/index.html", headers=signed_in).status_code == 403
    assert client.get("/runs/cdc_changes/r1", headers=signed_in).status_code == 403
    viewer = {"Authorization": f"Bearer {token('viewer')}"}
    response = client.get("/index.html", headers=viewer)
    assert response.status_code == 200 and "every run" in response.text
