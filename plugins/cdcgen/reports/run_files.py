"""The folder a run record owns besides itself: its Data Docs and checks pages.

A generation's validation writes GX Data Docs to ``<label>/`` (``generation_ts=<ms>/``,
or ``table=<table>/generation_ts=<ms>/`` under tablets; replaced by the next validation
of that generation); a changes run writes its row checks to ``changes/<table>/<run>/``
(one job's Data Docs there, or one per job in ``job-N/``). The record links the folder
through ``data_docs_path``. Retention removes such a folder with the last record linking
it; the folder comes from a record any task may write, so it is removed only when it is
clearly one a validation wrote: a folder (not a link) inside the report directory, of
that exact shape, carrying the marker validations leave (:data:`MARKER`), not written
to lately (a retried run may be writing into it before its record exists), and linked
by no record kept.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from cdcgen.reports.checks_page import CHECKS_DIR

#: The file every validation's Data Docs folder carries (:mod:`cdcgen.validation.docs_folder`).
MARKER = ".cdcgen-data-docs"
#: Folders of the site itself, never a run's.
_SITE_FOLDERS = frozenset({"runs", "generations", "replication", "summaries", "static"})


def owned_folder(data_docs_path: str) -> PurePosixPath | None:
    """The folder (relative to the report directory) a record with this link owns, or
    None when the link is not one a validation writes (absolute, another shape,
    ``..``, hidden parts)."""
    if not data_docs_path:
        return None
    path = PurePosixPath(data_docs_path)
    parts = path.parts
    if path.is_absolute() or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        return None
    if parts[0] == CHECKS_DIR:
        return PurePosixPath(*parts[:3]) if len(parts) >= 4 else None
    if len(parts) in (2, 3) and parts[0] not in _SITE_FOLDERS:
        return path.parent  # a generation's Data Docs: <label>/index.html
    return None


def remove_unlinked(
    report_dir: Path,
    removed: Iterable[str],
    kept: Iterable[str],
    *,
    untouched_since: float,
) -> list[Path]:
    """Remove the folders the ``removed`` records' links own that no ``kept`` link lies
    in, written by a validation and not modified since ``untouched_since`` (epoch
    seconds); returns the folders removed."""
    linked = {folder for folder in map(owned_folder, kept) if folder is not None}
    root = Path(report_dir).resolve()
    gone: list[Path] = []
    for folder in {f for f in map(owned_folder, removed) if f is not None} - linked:
        path = Path(report_dir) / folder
        try:
            if (
                path.is_symlink()
                or not path.is_dir()
                or path.resolve() != root / folder  # no link on the way
                or path.stat().st_mtime >= untouched_since
                or not _written_by_a_validation(path)
            ):
                continue
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)
        gone.append(path)
    return gone


def _written_by_a_validation(folder: Path) -> bool:
    """The folder carries the marker, itself or in each job's folder of a changes run."""
    if (folder / MARKER).is_file():
        return True
    jobs = [p for p in folder.glob("job-*") if p.is_dir()]
    return bool(jobs) and all((job / MARKER).is_file() for job in jobs)
