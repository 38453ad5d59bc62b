"""Every run record without its ring, kept in one hidden file so a save re-reads only
what changed.

Listing the runs (the index, the changes page, retention) needs every record's summary;
parsing every record file for it on each save made a task's cost grow with the site's
history (0.64 s at 4,000 records). ``runs/.catalog.json`` keeps, per record file, its
size and modification time and its JSON without the ring; a refresh stats the files
(cheap) and parses only those that are new or changed since. The catalog is a cache,
never the truth: two tasks that refresh at once each write their own view (through a
rename, whole), and whatever one missed the next refresh finds changed and reads again;
a lost, stale or unreadable catalog costs one full read. It is hidden, so the report
view never serves it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdcgen.reports.files import write_atomic
from cdcgen.reports.record_json import NotARecord, RecordError, from_json
from cdcgen.reports.record_store import RING_FILE, RUNS_DIR, read_record_json
from cdcgen.reports.records import RunRecord

CATALOG = ".catalog.json"
_VERSION = 1


@dataclass(frozen=True)
class Entry:
    """One record file as last read: the stat it was read at, its JSON (no ring)."""

    mtime_ns: int
    size: int
    data: dict[str, Any]


@dataclass(frozen=True)
class Catalog:
    #: File name -> entry, for every readable record file in ``runs/``.
    entries: dict[str, Entry]
    #: One message per record file that could not be read (shown on the index).
    problems: tuple[str, ...]
    #: Names of the record files read (parsed) by this refresh: new or changed ones.
    read: tuple[str, ...]

    def records(self) -> dict[str, RunRecord]:
        """File name -> record (ring empty), for every entry."""
        return {name: _record(entry.data) for name, entry in self.entries.items()}


def _record(data: dict[str, Any]) -> RunRecord:
    return from_json({k: v for k, v in data.items() if k != RING_FILE})


def catalog_path(report_dir: Path) -> Path:
    return Path(report_dir) / RUNS_DIR / CATALOG


def refresh(report_dir: Path) -> Catalog:
    """The catalog brought up to date with ``runs/`` (and written back if it changed)."""
    report_dir = Path(report_dir)
    known = _read(catalog_path(report_dir))
    runs = report_dir / RUNS_DIR
    entries: dict[str, Entry] = {}
    problems: list[str] = []
    read: list[str] = []
    for path in sorted(runs.glob("*.json")) if runs.is_dir() else ():
        if path.name.startswith("."):
            continue
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue  # removed by retention since the listing
        cached = known.get(path.name)
        if cached is not None and (cached.mtime_ns, cached.size) == (
            stat.st_mtime_ns,
            stat.st_size,
        ):
            entries[path.name] = cached
            continue
        read.append(path.name)
        try:
            data = read_record_json(path)
            data.pop("ring", None)  # inline in records older than ring files: pages reload it
            _record(data)  # a file that cannot be shown is a problem, not an entry
        except FileNotFoundError:
            continue
        except NotARecord:
            continue  # another tool's JSON (the DAG's run summaries live here too)
        except RecordError as exc:
            problems.append(f"{path.name}: {exc}")
            continue
        entries[path.name] = Entry(stat.st_mtime_ns, stat.st_size, data)
    if entries != known:
        write(report_dir, entries)
    return Catalog(entries, tuple(problems), tuple(read))


def write(report_dir: Path, entries: dict[str, Entry]) -> None:
    body = {
        "version": _VERSION,
        "entries": {
            name: {"mtime_ns": e.mtime_ns, "size": e.size, "data": e.data}
            for name, e in sorted(entries.items())
        },
    }
    write_atomic(catalog_path(report_dir), json.dumps(body, separators=(",", ":")))


def _read(path: Path) -> dict[str, Entry]:
    """The entries of the catalog file; none if it is missing or not ours (read afresh)."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        if body.get("version") != _VERSION:
            return {}
        return {
            str(name): Entry(int(e["mtime_ns"]), int(e["size"]), dict(e["data"]))
            for name, e in body["entries"].items()
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}
