"""Write run records and (re)build the static report site from them.

Layout under the report directory::

    runs/<kind>-<time>-...json     one record per generation or changes run
    runs/rings/<sha256>.json       the rings generation records name (:mod:`.record_store`)
    replication/<sink>/*.json      one record per replication run (:mod:`.replication_records`)
    runs/.catalog.json             every record without its ring (:mod:`.catalog`)
    index.html, index-2.html, ...  every run kept, newest first, a page of 100 each
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
from collections.abc import Iterable
from dataclasses import dataclass, replace
from glob import escape as glob_escape
from pathlib import Path
from typing import Any, TypeVar

from cdcgen.config import DEFAULT_REPORT_KEEP_RUNS
from cdcgen.reports import catalog, replication_records
from cdcgen.reports.changes_page import render_changes_page
from cdcgen.reports.files import write_atomic
from cdcgen.reports.generation_page import render_generation_page
from cdcgen.reports.index_page import index_page_name, render_index_pages
from cdcgen.reports.record_store import RUNS_DIR, load_record, load_records, save_record
from cdcgen.reports.records import (
    ChangesReport,
    GenerationReport,
    RunRecord,
    generation_page_name,
    record_key,
    slug,
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
    "prune",
    "record_replication",
    "record_run",
    "save_record",
    "update_site",
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
    return _build(Path(report_dir), everything=True)


def update_site(report_dir: Path) -> SitePaths:
    """Render what records saved since the last build change: the pages of their
    generations (a page older than a record of it), the changes, replication and index
    pages; not every generation's page (each draws its ring), so the report view can
    call it on a request."""
    return _build(Path(report_dir), everything=False)


def _build(report_dir: Path, *, everything: bool) -> SitePaths:
    found = catalog.refresh(report_dir)
    records = _relative(found.records(), report_dir)
    newest: dict[str, int] = {}  # page -> its newest record's mtime
    for f, r in records.items():
        if isinstance(r, GenerationReport):
            name = generation_page_name(r)
            newest[name] = max(newest.get(name, 0), found.entries[f].mtime_ns)
    pages = {
        _write_generation_page(report_dir, runs)
        for name, runs in _generations(records.values()).items()
        if everything or _older_than(report_dir / GENERATIONS_DIR / name, newest[name])
    }
    unread = _write_lists(report_dir, records, found.problems)
    return SitePaths(
        report_dir / INDEX,
        report_dir / CHANGES,
        report_dir / REPLICATION,
        tuple(sorted(pages)),
        (*found.problems, *unread),
    )


def record_run(
    report_dir: Path, record: RunRecord, *, keep_runs: int = DEFAULT_REPORT_KEEP_RUNS
) -> Path:
    """Save ``record``, remove the oldest records beyond ``keep_runs``, and render what
    they change; returns the page a person should open.

    The one call a task makes at its end (success or failure): for a generation, its
    summary page (the path returned); for a changes run, ``changes.html``; then the
    index pages. Only the new record and records changed since the last build are read
    (:mod:`.catalog`), only the record's own generation page is drawn, and the lists are
    bounded by ``keep_runs``, so a task's cost does not grow with the site's history
    (:func:`build_site` renders all).
    """
    report_dir = Path(report_dir)
    saved = save_record(report_dir, record).name
    found = catalog.refresh(report_dir)
    kept = prune(report_dir, found, keep_runs, spare=saved)
    records = _relative(kept, report_dir)
    if isinstance(record, GenerationReport):
        name = generation_page_name(record)
        runs = _generations(records.values()).get(name) or [_site_relative(record, report_dir)]
        target = _write_generation_page(report_dir, runs, record)
    else:
        target = report_dir / CHANGES
    _write_lists(report_dir, records, found.problems)
    return target


def prune(
    report_dir: Path, found: catalog.Catalog, keep_runs: int, *, spare: str = ""
) -> dict[str, RunRecord]:
    """Remove the oldest records (by creation time) beyond ``keep_runs``, never ``spare``
    (the record just saved), and the page of a generation left without records; returns
    the records kept.

    Each removal is one unlink: a reader listing ``runs/`` at that moment either reads
    the whole record or skips it as gone (:func:`load_records`), never half of one.
    """
    records = found.records()
    oldest_first = sorted(records, key=lambda f: (records[f].created_at, f))
    excess = max(0, len(records) - keep_runs)
    removed = [f for f in oldest_first if f != spare][:excess]
    if not removed:
        return records
    runs = Path(report_dir) / RUNS_DIR
    for name in removed:
        (runs / name).unlink(missing_ok=True)
    gone = {f: records.pop(f) for f in removed}
    left = {generation_page_name(r) for r in records.values() if isinstance(r, GenerationReport)}
    for record in gone.values():
        if isinstance(record, GenerationReport) and generation_page_name(record) not in left:
            prefix = record_key(record).removesuffix(slug(record.run_id or "manual"))
            if not any(runs.glob(f"{glob_escape(prefix)}*.json")):  # one saved meanwhile
                (Path(report_dir) / GENERATIONS_DIR / generation_page_name(record)).unlink(
                    missing_ok=True
                )
    catalog.write(report_dir, {f: e for f, e in found.entries.items() if f in records})
    return records


def _write_lists(
    report_dir: Path, records: dict[str, RunRecord], problems: tuple[str, ...]
) -> list[str]:
    """The pages listing runs: changes, replication and the index pages; returns the
    replication records that could not be read."""
    every = list(records.values())
    changes = [r for r in every if isinstance(r, ChangesReport)]
    write_atomic(report_dir / CHANGES, render_changes_page(changes))
    replicated, unread = replication_records.read_runs(replication_records.load_records(report_dir))
    write_atomic(report_dir / REPLICATION, render_replication_page(replicated, unread))
    pages = render_index_pages(every, problems, replicated)
    for number, html in enumerate(pages, start=1):
        write_atomic(report_dir / index_page_name(number), html)
    for old in report_dir.glob("index-*.html"):  # pages past the last, after removals
        suffix = old.stem.removeprefix("index-")
        if suffix.isdigit() and int(suffix) > len(pages):
            old.unlink(missing_ok=True)
    return unread


def _older_than(page: Path, mtime_ns: int) -> bool:
    """Whether ``page`` is missing or older than a record it shows (whoever read the
    record into the catalog first, a lookup of the report view included)."""
    try:
        return page.stat().st_mtime_ns < mtime_ns
    except FileNotFoundError:
        return True


def _generations(records: Iterable[RunRecord]) -> dict[str, list[GenerationReport]]:
    by_generation: dict[str, list[GenerationReport]] = defaultdict(list)
    for record in records:
        if isinstance(record, GenerationReport):
            by_generation[generation_page_name(record)].append(record)
    return by_generation


def _relative(records: dict[str, RunRecord], report_dir: Path) -> dict[str, RunRecord]:
    """Links relative (:func:`_site_relative`) in every record."""
    return {f: _site_relative(r, report_dir) for f, r in records.items()}


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
    """Save a replication run's record and update the site; returns ``replication.html``.

    The one call a replication run or bootstrap makes at its end, so the page shows the
    sink's new consistency point as soon as the run has moved it.
    """
    replication_records.save_record(report_dir, record)
    update_site(report_dir)
    return Path(report_dir) / REPLICATION
