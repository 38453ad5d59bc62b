"""The report site as a small ASGI app, mounted into Airflow's API server by the plugin.

Routes (under the plugin's url prefix, ``/cdcgen-reports``):

    GET /                          the index (rendered in the response when a record is newer)
    GET /runs/{dag_id}/{run_id}    redirect to the page of that DAG run's latest record
    GET /{path}                    any file of the report dir (pages, GX Data Docs)

Files are served by a route rather than a ``StaticFiles`` mount so the route's
dependencies apply: inside Airflow every request must carry a valid Airflow
token (the UI's cookie when the page is shown in its iframe) of a user allowed to read
the runs of the DAG the page is about (:mod:`.owners`: the index, every DAG it lists;
a run's redirect, the DAG its path names), so one team's grant opens that team's
pages only. Files no DAG owns, hidden files and names no file can have are a 404.
A request never writes to the report folder: the tasks that record runs render the
pages, and an index older than a record (or missing, or a link a task planted in its
place) is answered with the first index page rendered from the records then and
there, written nowhere. FastAPI is imported when the app is first called, so loading
the plugin costs the scheduler, the DAG processor and the workers nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from cdcgen.reports import catalog, replication_records
from cdcgen.reports.html import esc
from cdcgen.reports.owners import owners
from cdcgen.reports.records import GenerationReport, generation_page_name
from cdcgen.reports.site import CHANGES, GENERATIONS_DIR, INDEX, RUNS_DIR, render_first_index

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: Where the plugin mounts the app in the API server.
URL_PREFIX = "/cdcgen-reports"


def default_report_dir() -> Path:
    from cdcgen.config import PipelineConfig

    return PipelineConfig.from_env().report_dir


def index_is_stale(report_dir: Path) -> bool:
    index = report_dir / INDEX
    if not index.exists():
        return True
    records = [
        *(report_dir / RUNS_DIR).glob("*.json"),
        *(report_dir / replication_records.RECORDS_DIR).glob("*/*.json"),
    ]
    newest = max((_mtime(p) for p in records if not p.name.startswith(".")), default=0.0)
    return newest > index.stat().st_mtime


def _mtime(path: Path) -> float:
    """0 for a record removed (by retention) since the listing."""
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def page_for_run(report_dir: Path, dag_id: str, run_id: str) -> str | None:
    """Relative path of the page showing that DAG run's latest record, if it has one.

    From the catalog (read, never written): a lookup parses only the records saved
    since a task last wrote it."""
    records = catalog.refresh(report_dir, write=False).records().values()
    mine = [r for r in records if r.dag_id == dag_id and r.run_id == run_id]
    if not mine:
        return None
    latest = max(mine, key=lambda r: r.created_at)
    if isinstance(latest, GenerationReport):
        return f"{GENERATIONS_DIR}/{quote(generation_page_name(latest))}"
    return CHANGES


def resolve_file(report_dir: Path, path: str) -> Path | None:
    """The file ``path`` names inside ``report_dir``; None if outside it, missing, hidden
    (a part starting with ``.``: markers, partial writes, anyone's dotfiles) or not a name
    a file can have (a NUL byte, a control character, too long for the file system).

    Every step is resolved and checked: the path, and the ``index.html`` a folder is
    served by, so no link (which any task writing reports could plant) leads out of
    the folder or into a hidden part of it."""
    parts = PurePosixPath(path).parts
    if any(part.startswith(".") for part in parts) or not path.isprintable():
        return None
    root = report_dir.resolve()
    try:
        candidate = _inside(root, root / path)
        if candidate is not None and candidate.is_dir():
            candidate = _inside(root, candidate / INDEX)
        return candidate if candidate is not None and candidate.is_file() else None
    except (OSError, ValueError):
        return None


def file_owners(report_dir: Path, path: str) -> frozenset[str] | None:
    """The DAGs whose runs a reader of ``path`` must be allowed to read: the owners of the
    name asked for and, when it leads to a file (through a link a task planted, say),
    of that file too; None if either has no owner."""
    asked = owners(path)
    found = resolve_file(report_dir, path) if asked is not None else None
    if asked is None or found is None:
        return asked  # a file that is not there is the route's 404
    served = owners(found.relative_to(report_dir.resolve()).as_posix())
    return None if served is None else asked | served


def _inside(root: Path, path: Path) -> Path | None:
    """``path`` resolved, if it stays in ``root`` (resolved) and out of its hidden parts."""
    resolved = path.resolve()
    if not resolved.is_relative_to(root):
        return None
    if any(part.startswith(".") for part in resolved.relative_to(root).parts):
        return None  # a link inside the folder that leads to a hidden one
    return resolved


def create_app(
    report_dir: Callable[[], Path] = default_report_dir, *, require_login: bool = True
) -> Any:
    """The FastAPI app; ``require_login`` adds Airflow's permission check: the user may
    read the runs of each DAG the requested page is about, as decided from its path
    (:func:`file_owners`; a ``/runs/{dag_id}/...`` redirect, that DAG); being logged in
    is not enough, and nothing else in the request (a ``?dag_id=``) counts."""
    from fastapi import Depends, FastAPI, HTTPException, Request
    from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse

    def access(owners_of: Callable[[Request], frozenset[str] | None]) -> list[Any]:
        if not require_login:
            return []
        from cdcgen.reports.web_access import dag_read_access

        return [Depends(dag_read_access(owners_of))]

    app = FastAPI(title="cdcgen reports", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get(
        "/",
        include_in_schema=False,
        dependencies=access(lambda _: owners(INDEX)),
    )
    def index() -> Any:
        # Tasks write the index as a file: a link in its place was planted, and is never
        # followed (not even to a page inside the folder, which has owners of its own).
        root = report_dir()
        planted = (root / INDEX).is_symlink()
        found = None if planted else resolve_file(root, INDEX)
        if found is None or index_is_stale(root):
            return HTMLResponse(render_first_index(root))
        return FileResponse(found, media_type="text/html")

    @app.get(
        "/runs/{dag_id}/{run_id}",
        include_in_schema=False,
        dependencies=access(lambda request: frozenset({request.path_params["dag_id"]})),
    )
    def run_page(dag_id: str, run_id: str) -> Any:
        root = report_dir()
        target = page_for_run(root, dag_id, run_id)
        if target is None:
            return HTMLResponse(
                "<!DOCTYPE html><html><body style='font-family:sans-serif'>"
                f"<p>No report has been recorded for run <code>{esc(run_id)}</code> of "
                f"<code>{esc(dag_id)}</code> yet.</p>"
                f'<p><a href="{URL_PREFIX}/">All runs</a></p></body></html>'
            )
        return RedirectResponse(f"{URL_PREFIX}/{target}", status_code=307)

    @app.get(
        "/{path:path}",
        include_in_schema=False,
        dependencies=access(lambda request: file_owners(report_dir(), request.path_params["path"])),
    )
    def file(path: str) -> Any:
        found = resolve_file(report_dir(), path)
        if found is None:
            raise HTTPException(status_code=404, detail="no such report file")
        return FileResponse(found)

    return app


class LazyApp:
    """An ASGI app that builds the real one on its first request (keeps plugin import cheap)."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._app: Any = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            self._app = self._factory()
        await self._app(scope, receive, send)
