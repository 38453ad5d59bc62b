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
a browser) never sees half a page even while two tasks record at once. The pages are a
pure function of ``runs/`` and ``replication/``, and a task lists ``runs/`` again once it
has written them (rendering anew while another task changed it), so the last to write
has seen every record. Retention (``keep_runs``) removes the oldest records with the
generation pages, ring files and Data Docs or checks folders only they used; nothing
else under the directory.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import timedelta
from glob import escape as glob_escape
from pathlib import Path
from typing import TypeVar

from cdcgen.adapters.files import write_atomic
from cdcgen.config import DEFAULT_REPORT_KEEP_RUNS
from cdcgen.core.replication_record import ReplicationRecord
from cdcgen.reports import catalog, replication_records, run_files
from cdcgen.reports.changes_page import render_changes_page
from cdcgen.reports.generation_page import render_generation_page
from cdcgen.reports.index_page import index_page_name, index_page_number, render_index_pages
from cdcgen.reports.record_store import (
    RING_FILE,
    RUNS_DIR,
    load_record,
    load_records,
    ring_digest,
    ring_path,
    save_record,
)
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
    "render_first_index",
    "save_record",
    "update_site",
]
R = TypeVar("R", bound=RunRecord)

GENERATIONS_DIR = "generations"
INDEX = "index.html"
CHANGES = "changes.html"
#: How long a ring file or a run's folder no kept record names stays: a task saving a
#: record of that ring at that moment touched it first, a retried run writes its
#: checks into its folder before saving its record, and both are long done by then.
REMOVAL_GRACE = timedelta(hours=1)
#: Renderings of the lists at most per save, while other tasks keep changing ``runs/``
#: (the next save renders what the last attempt missed).
_ATTEMPTS = 3


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
    pages; not every generation's page (each draws its ring)."""
    return _build(Path(report_dir), everything=False)


def _build(report_dir: Path, *, everything: bool) -> SitePaths:
    pages: set[Path] = set()
    problems: tuple[str, ...] = ()
    for _ in range(_ATTEMPTS):
        found = catalog.refresh(report_dir)
        drawn, unread = _render(report_dir, found, everything=everything)
        pages |= drawn
        problems = (*found.problems, *unread)
        if not catalog.changed_since(report_dir, found):
            break
    return SitePaths(
        report_dir / INDEX,
        report_dir / CHANGES,
        report_dir / REPLICATION,
        tuple(sorted(pages)),
        problems,
    )


def _render(
    report_dir: Path,
    found: catalog.Catalog,
    *,
    everything: bool = False,
    saved: GenerationReport | None = None,
) -> tuple[set[Path], list[str]]:
    """Write the pages of ``found``: every generation page if ``everything``, else the
    page of ``saved`` and any page missing or older than a record of it (a task that
    died between its save and its pages leaves no page behind for long); then the
    lists. Returns the generation pages drawn and the unreadable replication records."""
    records = _relative(found.records(), report_dir)
    newest: dict[str, int] = {}  # page -> its newest record's mtime
    for f, r in records.items():
        if isinstance(r, GenerationReport):
            name = generation_page_name(r)
            newest[name] = max(newest.get(name, 0), found.entries[f].stat[1])
    by_generation = _generations(records.values())
    own = generation_page_name(saved) if saved is not None else None
    if saved is not None and own is not None and own not in by_generation:
        by_generation[own] = [_site_relative(saved, report_dir)]  # removed meanwhile
    pages = {
        _write_generation_page(report_dir, runs, saved)
        for name, runs in by_generation.items()
        if everything
        or name == own
        or _older_than(report_dir / GENERATIONS_DIR / name, newest.get(name, 0))
    }
    return pages, _write_lists(report_dir, records, found.problems)


def render_first_index(report_dir: Path) -> str:
    """The first index page as the records stand now, written nowhere: what the report
    view answers when ``index.html`` is missing, older than a record, or not a file of
    the site (a link a task planted), as a request never writes to the site."""
    report_dir = Path(report_dir)
    found = catalog.refresh(report_dir, write=False)
    records = _relative(found.records(), report_dir)
    replicated, unread = replication_records.load_runs(report_dir)
    return render_index_pages(list(records.values()), (*found.problems, *unread), replicated)[0]


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

    Another task may save or remove a record between this one's listing and its last
    write, and its pages would then miss that record until the next save (the record is
    older than the index, so the report view would not notice either). So once the
    pages are written the folder is listed again (stats only), and the pages rendered
    anew while it changed: whichever task writes last has seen every record.
    """
    _check_keep(keep_runs)
    report_dir = Path(report_dir)
    saved = save_record(report_dir, record).name
    for _ in range(_ATTEMPTS):
        found = prune(report_dir, catalog.refresh(report_dir), keep_runs, spare=saved)
        _render(report_dir, found, saved=record if isinstance(record, GenerationReport) else None)
        if not catalog.changed_since(report_dir, found):
            break
    if isinstance(record, GenerationReport):
        return report_dir / GENERATIONS_DIR / generation_page_name(record)
    return report_dir / CHANGES


def _check_keep(keep_runs: int) -> None:
    """Refuse a bound that would remove the run just recorded (the setting is checked
    where it is read; this guards a direct call)."""
    if keep_runs < 1:
        raise ValueError(f"keep_runs must be at least 1, not {keep_runs}")


def prune(
    report_dir: Path, found: catalog.Catalog, keep_runs: int, *, spare: str = ""
) -> catalog.Catalog:
    """Remove the oldest records (by creation time) beyond ``keep_runs``, never ``spare``
    (the record just saved), with what only they used: the page of a generation left
    without records, ring files no kept record names, and the Data Docs and checks
    folders no kept record links (:mod:`.run_files`); returns the view without them.

    Each removal is one unlink: a reader listing ``runs/`` at that moment either reads
    the whole record or skips it as gone (:func:`load_records`), never half of one.
    Nothing but files the removed records name is removed: other JSON in ``runs/`` (not
    a record) is never counted nor touched.
    """
    report_dir = Path(report_dir)
    records = found.records()
    oldest_first = sorted(records, key=lambda f: (records[f].created_at, f))
    excess = max(0, len(records) - keep_runs)
    removed = [f for f in oldest_first if f != spare][:excess]
    if not removed:
        return found
    runs = report_dir / RUNS_DIR
    for name in removed:
        (runs / name).unlink(missing_ok=True)
    kept = found.without(set(removed))
    left = {
        generation_page_name(r) for r in kept.records().values() if isinstance(r, GenerationReport)
    }
    for name in removed:
        record = records[name]
        if isinstance(record, GenerationReport) and generation_page_name(record) not in left:
            prefix = record_key(record).removesuffix(slug(record.run_id or "manual"))
            if not any(runs.glob(f"{glob_escape(prefix)}*.json")):  # one saved meanwhile
                (report_dir / GENERATIONS_DIR / generation_page_name(record)).unlink(
                    missing_ok=True
                )
    now = time.time()
    _remove_unnamed_rings(report_dir, {_ring_of(found.entries[f]) for f in removed}, kept, now)
    relative = _relative(records, report_dir)
    run_files.remove_unlinked(
        report_dir,
        (relative[f].data_docs_path for f in removed),
        (r.data_docs_path for f, r in relative.items() if f not in removed),
        untouched_since=now - REMOVAL_GRACE.total_seconds(),
    )
    catalog.save(report_dir, kept.entries)
    return kept


def _ring_of(entry: catalog.Entry) -> str | None:
    return ring_digest(entry.data.get(RING_FILE)) if entry.data is not None else None


def _remove_unnamed_rings(
    report_dir: Path, candidates: set[str | None], kept: catalog.Catalog, now: float
) -> None:
    """Remove the ring files of ``candidates`` that no kept record names and no save
    has touched for :data:`REMOVAL_GRACE` (a task saving a record of that ring right now,
    not yet in ``kept``, touched it first: :func:`.record_store.save_record`)."""
    named = {_ring_of(entry) for entry in kept.entries.values()}
    for digest in candidates - named:
        if digest is None:
            continue
        path = ring_path(report_dir, digest)
        try:
            if not path.is_symlink() and path.stat().st_mtime < now - REMOVAL_GRACE.total_seconds():
                path.unlink()
        except FileNotFoundError:
            continue


def _write_lists(
    report_dir: Path, records: dict[str, RunRecord], problems: tuple[str, ...]
) -> list[str]:
    """The pages listing runs: changes, replication and the index pages; returns the
    replication records that could not be read."""
    every = list(records.values())
    changes = [r for r in every if isinstance(r, ChangesReport)]
    write_atomic(report_dir / CHANGES, render_changes_page(changes))
    replicated, unread = replication_records.load_runs(report_dir)
    write_atomic(report_dir / REPLICATION, render_replication_page(replicated, unread))
    pages = render_index_pages(every, problems, replicated)
    for number, html in enumerate(pages, start=1):
        write_atomic(report_dir / index_page_name(number), html)
    for old in report_dir.glob("index-*.html"):  # pages past the last, after removals
        past = index_page_number(old.name)
        if past is not None and past > len(pages):
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


def record_replication(
    report_dir: Path, record: ReplicationRecord, *, keep_runs: int = DEFAULT_REPORT_KEEP_RUNS
) -> Path:
    """Save a replication run's record, keep the sink table's newest ``keep_runs``, and
    update the site; returns ``replication.html``.

    The one call a replication run or bootstrap makes at its end, so the page shows the
    sink's new consistency point as soon as the run has moved it.
    """
    _check_keep(keep_runs)
    saved = replication_records.save_record(report_dir, record)
    replication_records.keep_newest(saved, keep_runs)
    update_site(report_dir)
    return Path(report_dir) / REPLICATION
