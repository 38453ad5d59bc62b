"""Write run records and (re)build the static report site from them.

Layout under the report directory::

    runs/<kind>-<time>-...json     one record per generation or changes run
    runs/rings/<sha256>.json       the rings generation records name (:mod:`.record_store`)
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
from typing import Any, TypeVar

from cdcgen.reports import replication_records
from cdcgen.reports.changes_page import render_changes_page
from cdcgen.reports.files import write_atomic
from cdcgen.reports.generation_page import render_generation_page
from cdcgen.reports.index_page import render_index
from cdcgen.reports.record_store import RUNS_DIR, load_record, load_records, save_record
from cdcgen.reports.records import (
    ChangesReport,
    GenerationReport,
    RunRecord,
    generation_page_name,
    record_key,
)
from cdcgen.reports.replication_page import REPLICATION, render_replication_page

__all__ = [
    "CHANGES",
    "GENERATIONS_DIR",
    "INDEX",
    "RUNS_DIR",
    "SitePaths",
    "build_site",
    "load_record",
    "load_records",
    "record_replication",
    "record_run",
    "save_record",
]
R = TypeVar("R", bound=RunRecord)

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


def _site_relative(record: R, report_dir: Path) -> R:
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
    """Render every page from ``runs/`` and ``replication/``; safe to call at any time."""
    report_dir = Path(report_dir)
    records, problems = _summaries(report_dir)
    by_generation: dict[str, list[GenerationReport]] = defaultdict(list)
    changes: list[ChangesReport] = []
    for record in records:
        if isinstance(record, GenerationReport):
            by_generation[generation_page_name(record)].append(record)
        else:
            changes.append(record)
    pages = [_write_generation_page(report_dir, runs) for runs in by_generation.values()]
    changes_path = report_dir / CHANGES
    write_atomic(changes_path, render_changes_page(changes))
    replicated, unread = replication_records.read_runs(replication_records.load_records(report_dir))
    replication_path = report_dir / REPLICATION
    write_atomic(replication_path, render_replication_page(replicated, unread))
    index_path = report_dir / INDEX
    write_atomic(index_path, render_index(records, problems, replicated))
    return SitePaths(
        index_path, changes_path, replication_path, tuple(sorted(pages)), (*problems, *unread)
    )


def record_run(report_dir: Path, record: RunRecord) -> Path:
    """Save ``record`` and render what it changes; returns the page a person should open.

    The one call a task makes at its end (success or failure): for a generation, its
    summary page (the path returned) and the index; for a changes run, ``changes.html``
    and the index. Other pages are functions of records this one does not touch, so a
    task's cost does not grow with the site's history (:func:`build_site` renders all).
    """
    report_dir = Path(report_dir)
    save_record(report_dir, record)
    records, problems = _summaries(report_dir)
    if isinstance(record, GenerationReport):
        name = generation_page_name(record)
        mine = [r for r in records if isinstance(r, GenerationReport)]
        target = _write_generation_page(
            report_dir, [r for r in mine if generation_page_name(r) == name], record
        )
    else:
        target = report_dir / CHANGES
        write_atomic(
            target, render_changes_page([r for r in records if isinstance(r, ChangesReport)])
        )
    replicated, _ = replication_records.read_runs(replication_records.load_records(report_dir))
    write_atomic(report_dir / INDEX, render_index(records, problems, replicated))
    return target


def _summaries(report_dir: Path) -> tuple[list[RunRecord], list[str]]:
    """Every record without its ring (what lists and histories need), links relative."""
    records, problems = load_records(report_dir, rings=False)
    return [_site_relative(record, report_dir) for record in records], problems


def _write_generation_page(
    report_dir: Path, runs: list[GenerationReport], known: GenerationReport | None = None
) -> Path:
    """One generation's page: its latest record over all its runs. The latest one's ring
    is read back from its file, unless it is ``known`` (the record a task just saved)."""
    history = sorted(runs, key=lambda r: r.created_at, reverse=True)
    key = record_key(history[0])
    if known is not None and record_key(known) == key:
        latest: RunRecord | None = known
    else:
        latest = load_record(report_dir, key)
    shown = history[0] if not isinstance(latest, GenerationReport) else latest
    path = report_dir / GENERATIONS_DIR / generation_page_name(history[0])
    write_atomic(path, render_generation_page(_site_relative(shown, report_dir), history))
    return path


def record_replication(report_dir: Path, record: dict[str, Any]) -> Path:
    """Save a replication run's record and rebuild the site; returns ``replication.html``.

    The one call a replication run or bootstrap makes at its end, so the page shows the
    sink's new consistency point as soon as the run has moved it.
    """
    replication_records.save_record(report_dir, record)
    build_site(report_dir)
    return Path(report_dir) / REPLICATION
