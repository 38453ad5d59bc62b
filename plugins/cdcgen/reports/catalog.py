"""Every run record without its ring, kept in one hidden file so a save re-reads only
what changed.

Listing the runs (the index, the changes page, retention) needs every record's summary;
parsing every record file for it on each save made a task's cost grow with the site's
history. ``runs/.catalog.json`` keeps, per file of ``runs/``, the stat it was read at
(inode, modification time, size) and its JSON without the ring (or that it is another
tool's JSON); a refresh stats the files and parses only those that are new or changed
since. The inode is part of the stat because every record is written through a rename:
a record rewritten within one tick of a coarse clock, at the same size, still reads
as changed.

The catalog is a cache, never the truth. Two tasks that refresh at once each write
their own view (through a rename, whole), and whatever one missed the next refresh
finds changed and reads again. A catalog that is missing, not JSON, of another version,
or whose entry no longer parses as a record is not trusted: the files it cannot vouch
for are read again. It is hidden, so the report view never serves it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdcgen.adapters.files import write_atomic
from cdcgen.reports.errors import NotARecord, RecordError
from cdcgen.reports.record_json import from_json
from cdcgen.reports.record_store import RING_FILE, RUNS_DIR, read_record_json
from cdcgen.reports.records import RunRecord

CATALOG = ".catalog.json"
_VERSION = 2

#: What identifies one version of a file: inode, modification time (ns), size.
Stat = tuple[int, int, int]


@dataclass(frozen=True)
class Entry:
    """One file of ``runs/`` as last read: the stat it was read at, and its JSON (no
    ring), or None for JSON that is not a run record (another tool's, kept here too)."""

    stat: Stat
    data: dict[str, Any] | None
    #: The parsed record (ring empty); derived from ``data``, never written.
    record: RunRecord | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Catalog:
    #: File name -> entry, for every record file and other JSON read in ``runs/``.
    entries: dict[str, Entry]
    #: One message per record file that could not be read (shown on the index).
    problems: tuple[str, ...]
    #: Names of the files read (parsed) by this refresh: new or changed ones.
    read: tuple[str, ...]
    #: File name -> stat for every file this view was built from, unreadable ones
    #: included: what :func:`changed_since` compares the folder with.
    seen: dict[str, Stat]

    def records(self) -> dict[str, RunRecord]:
        """File name -> record (ring empty), for every record file."""
        return {name: e.record for name, e in self.entries.items() if e.record is not None}

    def without(self, names: set[str]) -> Catalog:
        """This view with ``names`` removed (retention unlinked them)."""
        return Catalog(
            {n: e for n, e in self.entries.items() if n not in names},
            self.problems,
            self.read,
            {n: s for n, s in self.seen.items() if n not in names},
        )


def _record(data: dict[str, Any]) -> RunRecord:
    return from_json({k: v for k, v in data.items() if k != RING_FILE})


def catalog_path(report_dir: Path) -> Path:
    return Path(report_dir) / RUNS_DIR / CATALOG


def _files(report_dir: Path) -> list[Path]:
    runs = Path(report_dir) / RUNS_DIR
    if not runs.is_dir():
        return []
    return sorted(p for p in runs.glob("*.json") if not p.name.startswith("."))


def _stat(path: Path) -> Stat | None:
    try:
        s = path.stat()
    except FileNotFoundError:
        return None  # removed by retention since the listing
    return (s.st_ino, s.st_mtime_ns, s.st_size)


def stats(report_dir: Path) -> dict[str, Stat]:
    """File name -> stat of every (non-hidden) JSON file in ``runs/``; nothing is read."""
    found = {path.name: _stat(path) for path in _files(report_dir)}
    return {name: stat for name, stat in found.items() if stat is not None}


def changed_since(report_dir: Path, view: Catalog) -> bool:
    """Whether ``runs/`` now differs from what ``view`` was built from (a record saved,
    rewritten or removed by another task since)."""
    return stats(report_dir) != view.seen


def refresh(report_dir: Path, *, write: bool = True) -> Catalog:
    """The catalog brought up to date with ``runs/``, and written back if it changed
    (unless ``write`` is false: the report view never writes during a request)."""
    report_dir = Path(report_dir)
    known = _read(catalog_path(report_dir))
    entries: dict[str, Entry] = {}
    problems: list[str] = []
    read: list[str] = []
    seen: dict[str, Stat] = {}
    for path in _files(report_dir):
        stat = _stat(path)
        if stat is None:
            continue
        cached = known.get(path.name)
        if cached is not None and cached.stat == stat:
            entries[path.name] = cached
            seen[path.name] = stat
            continue
        read.append(path.name)
        try:
            entry = _read_file(path, stat)
        except FileNotFoundError:
            continue
        except RecordError as exc:
            problems.append(f"{path.name}: {exc}")
            seen[path.name] = stat
            continue
        entries[path.name] = entry
        seen[path.name] = stat
    if write and entries != known:
        save(report_dir, entries)
    return Catalog(entries, tuple(problems), tuple(read), seen)


def _read_file(path: Path, stat: Stat) -> Entry:
    """The entry of one file; raises :class:`RecordError` for a record that cannot be
    shown (a problem, not an entry)."""
    try:
        data = read_record_json(path)
    except NotARecord:
        return Entry(stat, None)  # another tool's JSON (the DAG's run summaries)
    data.pop("ring", None)  # inline in records older than ring files: pages reload it
    return Entry(stat, data, _record(data))


def save(report_dir: Path, entries: dict[str, Entry]) -> None:
    """Write ``entries`` as the catalog, whole (through a rename)."""
    body = {
        "version": _VERSION,
        "entries": {
            name: {"stat": list(e.stat), "data": e.data} for name, e in sorted(entries.items())
        },
    }
    write_atomic(catalog_path(report_dir), json.dumps(body, separators=(",", ":")))


def _read(path: Path) -> dict[str, Entry]:
    """The entries of the catalog file that still parse; none if the file is missing or
    not ours. An entry that does not parse is left out, so its file is read again."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(body, dict) or body.get("version") != _VERSION:
            return {}
        raw = body["entries"]
        if not isinstance(raw, dict):
            return {}
    except (OSError, ValueError, KeyError):
        return {}
    entries: dict[str, Entry] = {}
    for name, item in raw.items():
        entry = _entry(item)
        if entry is not None:
            entries[str(name)] = entry
    return entries


def _entry(item: Any) -> Entry | None:
    try:
        ino, mtime_ns, size = (int(n) for n in item["stat"])
        data = item["data"]
        if data is None:
            return Entry((ino, mtime_ns, size), None)
        if not isinstance(data, dict):
            return None
        return Entry((ino, mtime_ns, size), data, _record(data))
    except (RecordError, ValueError, TypeError, KeyError, AttributeError):
        return None
