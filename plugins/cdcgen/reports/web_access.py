"""Airflow's permission check for the report view: read DAG runs of the DAGs a page is about.

Airflow's ``requires_access_dag`` dependency, used as is, takes the DAG from the path
or else from the query string (``?dag_id=``), and without either asks whether the user
may read DAGs at all: one DAG's read permission, named in the query, opened every
report. Here the route says which DAGs a request concerns (from the path, see
:mod:`.owners`), and each of them is checked with Airflow's own rule for that DAG, so
an auth manager's per-DAG and per-team grants decide, and nothing the client adds does.

Imported by :func:`cdcgen.reports.web.create_app` only when the app runs inside
Airflow, so the plugin's import stays cheap and the app runs without Airflow in tests.
"""

from __future__ import annotations

from collections.abc import Callable

from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag
from fastapi import HTTPException, Request, status

#: Said (as a 404) for a path no DAG owns, whoever asks: it is no DAG's report.
NO_OWNER = "no DAG owns this report path"

Owners = Callable[[Request], frozenset[str] | None]


def dag_read_access(owners_of: Owners) -> Callable[[Request, BaseUser], None]:
    """A FastAPI dependency: the signed-in user may read the runs of every DAG that
    ``owners_of(request)`` names (403 otherwise); a request it names none for is a 404,
    as no permission can open what no DAG owns."""

    def check(request: Request, user: GetUserDep) -> None:
        dag_ids = owners_of(request)
        if not dag_ids:
            raise HTTPException(status.HTTP_404_NOT_FOUND, NO_OWNER)
        for dag_id in sorted(dag_ids):
            # param_dag_id fixed: Airflow reads neither the path nor the query for it.
            requires_access_dag("GET", DagAccessEntity.RUN, param_dag_id=dag_id)(request, user)

    return check
