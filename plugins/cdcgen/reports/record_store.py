"""Where run records live on disk: ``runs/<key>.json``, their rings in ``runs/rings/``.

A generation's ring (an entry per range: 25,600 in the seed's large cluster, megabytes
of JSON) is the same in every record of that generation, and only its page draws it. Kept
inline, every task that records a run re-read every ring of the site's history to draw
the index, so recording grew with the history. The ring is therefore kept once, in a
file named by the SHA-256 of its JSON (writing it again is a no-op), and the record
names it; readers that only list runs (the index, the web app's run lookup) never open
it. Records written before rings moved out keep theirs inline and read as before.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from cdcgen.adapters.files import write_atomic
from cdcgen.reports.errors import NotARecord, RecordError
from cdcgen.reports.record_json import decode, encode, from_json, to_json
from cdcgen.reports.records import GenerationReport, RunRecord, record_key

RUNS_DIR = "runs"
RINGS_DIR = "rings"
#: The record field naming its ring file (absent: the ring, if any, is inline).
RING_FILE = "ring_file"
_DIGEST = re.compile(r"[0-9a-f]{64}")

#: The ring last read from or written to a ring file, with that file's digest. Publish
#: records the generation again with the ring validate's record gave it: the very same
#: object is known to be in that file, and is not encoded (1.6M tokens) and hashed
#: again to find so.
_last_ring: tuple[tuple[Any, ...], str] | None = None


def record_path(report_dir: Path, key: str) -> Path:
    return Path(report_dir) / RUNS_DIR / f"{key}.json"


def ring_path(report_dir: Path, digest: str) -> Path:
    return Path(report_dir) / RUNS_DIR / RINGS_DIR / f"{digest}.json"


def save_record(report_dir: Path, record: RunRecord) -> Path:
    """Write ``record`` as ``runs/<key>.json`` (its ring, if any, to its own file first,
    so a record never names a ring that is not there); returns the record's path.

    A ring file already there is touched rather than rewritten: retention removes a ring
    no kept record names only once it has not been touched for a while, so a ring this
    save relies on is not removed under it; should it be gone by the time the record is
    written all the same, it is written again."""
    global _last_ring
    ring_objects = record.ring if isinstance(record, GenerationReport) else ()
    known = _last_ring
    if (
        isinstance(record, GenerationReport)
        and ring_objects
        and known is not None
        and known[0] is ring_objects
        and _touch(ring_path(report_dir, known[1]))
    ):
        data = to_json(dataclasses.replace(record, ring=()))
        data.pop("ring", None)
        data[RING_FILE] = known[1]
        saved = _write_record(report_dir, record, data)
        if not ring_path(report_dir, known[1]).is_file():
            write_atomic(ring_path(report_dir, known[1]), encode(to_json(record)["ring"]))
        return saved
    data = to_json(record)
    ring = data.pop("ring", None)
    text = ""
    if ring:
        text = encode(ring)
        digest = hashlib.sha256(text.encode()).hexdigest()
        path = ring_path(report_dir, digest)
        if not _touch(path):
            write_atomic(path, text)
        data[RING_FILE] = digest
        _last_ring = (ring_objects, digest)
    saved = _write_record(report_dir, record, data)
    if ring and not ring_path(report_dir, data[RING_FILE]).is_file():
        write_atomic(ring_path(report_dir, data[RING_FILE]), text)
    return saved


def _touch(path: Path) -> bool:
    """Mark ``path`` as just used; False if there is no such file."""
    try:
        os.utime(path)
    except FileNotFoundError:
        return False
    return path.is_file()


def _write_record(report_dir: Path, record: RunRecord, data: dict[str, Any]) -> Path:
    path = record_path(report_dir, record_key(record))
    write_atomic(path, encode(data))
    return path


def read_record(report_dir: Path, path: Path, *, ring: bool = True) -> RunRecord:
    """The record in ``path``; without ``ring``, its ring file is not read (ring empty).

    Raises :class:`RecordError` (or :class:`NotARecord`) naming what is wrong, a missing
    or altered ring file included."""
    global _last_ring
    try:
        data = read_record_json(path)
    except FileNotFoundError as exc:
        raise RecordError(f"{path.name}: {exc.strerror or exc}") from exc
    digest = data.pop(RING_FILE, None)
    if digest is not None and ring:
        data["ring"] = _read_ring(report_dir, digest)
    record = from_json(data)
    if digest is not None and isinstance(record, GenerationReport) and record.ring:
        _last_ring = (record.ring, digest)
    return record


def read_record_json(path: Path) -> dict[str, Any]:
    """The decoded JSON of a record file, its ring file named but not read.

    FileNotFoundError passes through, for a caller listing the folder while retention
    removes a record (a reader that lists, then reads); any other failure is a
    :class:`RecordError` naming the file."""
    try:
        return decode(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise RecordError(f"{path.name}: {exc.strerror or exc}") from exc


def load_record(report_dir: Path, key: str) -> RunRecord | None:
    """The record saved as ``runs/<key>.json`` with its ring, or None if there is none or
    it is unreadable (the caller then builds it afresh)."""
    try:
        return read_record(report_dir, record_path(report_dir, key))
    except RecordError:
        return None


def load_records(report_dir: Path, *, rings: bool = True) -> tuple[list[RunRecord], list[str]]:
    """Every readable record (with its ring unless ``rings`` is false), and one message per
    file that is not (shown on the index)."""
    records: list[RunRecord] = []
    problems: list[str] = []
    runs = Path(report_dir) / RUNS_DIR
    for path in sorted(runs.glob("*.json")) if runs.is_dir() else ():
        try:
            record = read_record(report_dir, path, ring=rings)
        except NotARecord:
            continue  # another tool's JSON (the DAG's run summaries live here too)
        except RecordError as exc:
            if not path.exists():
                continue  # removed by retention since the listing: not a problem
            problems.append(f"{path.name}: {exc}")
        else:
            records.append(record)
    return records, problems


def ring_digest(value: Any) -> str | None:
    """``value`` if it is a SHA-256 digest (a ring file's name), else None: a record's
    ``ring_file`` field never leads to a path of its choosing."""
    return value if isinstance(value, str) and _DIGEST.fullmatch(value) else None


def _read_ring(report_dir: Path, digest: Any) -> Any:
    if ring_digest(digest) is None:
        raise RecordError(f"{RING_FILE}: not a SHA-256 digest: {digest!r}")
    path = ring_path(report_dir, digest)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RecordError(f"ring {digest[:16]}…: {exc.strerror or exc}") from exc
    if hashlib.sha256(raw).hexdigest() != digest:
        raise RecordError(f"ring {digest[:16]}… changed since it was recorded")
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise RecordError(f"ring {digest[:16]}…: not JSON: {exc}") from exc
