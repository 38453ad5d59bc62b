"""Write run records and (re)build the static report site from them.

Layout under the report directory::

    runs/<kind>-<time>-...json     one record per generation or changes run
    replication/<sink>/*.json      one record per replication run (:mod:`.replication_records`)
    index.html                     every run
    changes.html                   lag, watermark, rows per generation
    replication.html               per sink table: consistency point, lag, rejected changes
    generations/<time>-<id>.html   one summary page per generation (latest run)
    <anything else>                left alone (GX Data Docs live beside the pages)

Writes go through a temporary file and a rename, so a reader (the API server,
a browser) never sees half a page even while two tasks record at once; the
pages are a pure function of ``runs/`` and ``replication/``, so the last build
wins with the same result.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cdcgen.reports import replication_records
from cdcgen.reports.changes_page import render_changes_page
from cdcgen.reports.files import write_atomic
from cdcgen.reports.generation_page import render_generation_page
from cdcgen.reports.index_page import render_index
from cdcgen.reports.record_json import NotARecord, RecordError, dumps, loads
from cdcgen.reports.records import (
    ChangesReport,
    GenerationReport,
    RunRecord,
    generation_page_name,
    record_key,
)
from cdcgen.reports.replication_page import REPLICATION, render_replication_page

RUNS_DIR = "runs"
GENERATIONS_DIR = "generations"
INDEX = "index.html"
CHANGES = "changes.html"


@dataclass(frozen=True)
class SitePaths:
    index: Path
    changes: Path
    replication: Path
    generation_pages: tuple[Path, ...]
    problems: tuple[str, ...]


def _record_path(report_dir: Path, key: str) -> Path:
    return Path(report_dir) / RUNS_DIR / f"{key}.json"


def save_record(report_dir: Path, record: RunRecord) -> Path:
    """Write ``record`` as ``runs/<key>.json``; returns its path."""
    path = _record_path(report_dir, record_key(record))
    write_atomic(path, dumps(record))
    return path


def load_record(report_dir: Path, key: str) -> RunRecord | None:
    """The record saved as ``runs/<key>.json``, or None if there is none or it is
    unreadable (the caller then builds it afresh)."""
    path = _record_path(report_dir, key)
    try:
        return loads(path.read_text(encoding="utf-8"))
    except (OSError, RecordError):
        return None


def load_records(report_dir: Path) -> tuple[list[RunRecord], list[str]]:
    """Every readable record, and one message per file that is not (shown on the index)."""
    records: list[RunRecord] = []
    problems: list[str] = []
    runs = Path(report_dir) / RUNS_DIR
    for path in sorted(runs.glob("*.json")) if runs.is_dir() else ():
        try:
            record = loads(path.read_text(encoding="utf-8"))
        except NotARecord:
            continue  # another tool's JSON (the DAG's run summaries live here too)
        except (OSError, RecordError) as exc:
            problems.append(f"{path.name}: {exc}")
        else:
            records.append(record)
    return records, problems


def _site_relative(record: RunRecord, report_dir: Path) -> RunRecord:
    """Data Docs recorded by absolute path inside the report dir become relative links,
    so they work both from disk and through the Airflow plugin's mount."""
    docs = record.data_docs_path
    if docs and Path(docs).is_absolute():
        try:
            relative = Path(docs).resolve().relative_to(report_dir.resolve())
        except ValueError:
            return record
        return replace(record, data_docs_path=relative.as_posix())
    return record


def build_site(report_dir: Path) -> SitePaths:
    """Render every page from ``runs/`` and ``replication/``; safe to call after each
    recorded run."""
    report_dir = Path(report_dir)
    records, problems = load_records(report_dir)
    records = [_site_relative(record, report_dir) for record in records]
    by_generation: dict[str, list[GenerationReport]] = defaultdict(list)
    changes: list[ChangesReport] = []
    for record in records:
        if isinstance(record, GenerationReport):
            by_generation[generation_page_name(record)].append(record)
        else:
            changes.append(record)
    pages = []
    for name, runs in sorted(by_generation.items()):
        history = sorted(runs, key=lambda r: r.created_at, reverse=True)
        path = report_dir / GENERATIONS_DIR / name
        write_atomic(path, render_generation_page(history[0], history))
        pages.append(path)
    changes_path = report_dir / CHANGES
    write_atomic(changes_path, render_changes_page(changes))
    replicated, unread = replication_records.read_runs(replication_records.load_records(report_dir))
    replication_path = report_dir / REPLICATION
    write_atomic(replication_path, render_replication_page(replicated, unread))
    index_path = report_dir / INDEX
    write_atomic(index_path, render_index(records, problems, replicated))
    return SitePaths(index_path, changes_path, replication_path, tuple(pages), (*problems, *unread))


def record_run(report_dir: Path, record: RunRecord) -> Path:
    """Save ``record`` and rebuild the site; returns the page a person should open.

    The one call a task makes at its end (success or failure): for a generation,
    the path of its summary page; for a changes run, ``changes.html``.
    """
    save_record(report_dir, record)
    build_site(report_dir)
    if isinstance(record, GenerationReport):
        return Path(report_dir) / GENERATIONS_DIR / generation_page_name(record)
    return Path(report_dir) / CHANGES


def record_replication(report_dir: Path, record: dict[str, Any]) -> Path:
    """Save a replication run's record and rebuild the site; returns ``replication.html``.

    The one call a replication run or bootstrap makes at its end, so the page shows the
    sink's new consistency point as soon as the run has moved it.
    """
    replication_records.save_record(report_dir, record)
    build_site(report_dir)
    return Path(report_dir) / REPLICATION
