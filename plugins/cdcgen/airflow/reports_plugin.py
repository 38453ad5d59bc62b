"""Airflow plugin: the cdcgen report site inside the Airflow UI.

* ``fastapi_apps`` mounts :mod:`cdcgen.reports.web` at ``/cdcgen-reports`` in the
  API server (the pages, the GX Data Docs beside them, and a redirect from a DAG
  run to its report), behind Airflow's own login.
* ``external_views`` adds "CDC reports" to the Browse menu (the index, in an
  iframe) and a "CDC report" tab on every DAG run, which opens that run's page.
* ``listeners``: each task starts with a hook lineage collector of its own
  (:mod:`cdcgen.airflow.lineage_listener`), so the tasks' OpenLineage events claim what
  they read and wrote, and nothing an earlier task in the same process did.

Airflow loads it through the package's ``airflow.plugins`` entry point, so installing the
package is all a deployment does; it imports nothing heavy,
since every Airflow process loads it.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from cdcgen.airflow import lineage_listener
from cdcgen.reports.web import URL_PREFIX, LazyApp, create_app

REPORTS_VIEW = {
    "name": "CDC reports",
    "href": f"{URL_PREFIX}/",
    "destination": "nav",
    "category": "browse",
    "url_route": "cdcgen-reports",
}

RUN_REPORT_VIEW = {
    "name": "CDC report",
    "href": f"{URL_PREFIX}/runs/{{DAG_ID}}/{{RUN_ID}}",
    "destination": "dag_run",
    "url_route": "cdcgen-run-report",
}


class CdcgenReportsPlugin(AirflowPlugin):
    name = "cdcgen_reports"
    fastapi_apps = [  # noqa: RUF012 - Airflow reads these class attributes as lists
        {"app": LazyApp(create_app), "url_prefix": URL_PREFIX, "name": "cdcgen reports"}
    ]
    external_views = [REPORTS_VIEW, RUN_REPORT_VIEW]  # noqa: RUF012
    listeners = [lineage_listener]  # noqa: RUF012
