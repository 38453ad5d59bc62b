"""Replication run records: one JSON file per run and sink table, the replication page's input.

Layout under the report directory::

    replication/<sink keyspace.table>/<ended at>-<run id>.json

A record holds names, times and counts (source and sink table, consistency point, lag,
changes applied, changes rejected and why), never a credential. Written whole through
a rename, so a reader never sees half a record. A record is the run's
:class:`~cdcgen.core.replication_record.ReplicationRecord`, written and read back as
one; :func:`read_run` gives the page its view (times parsed), and the page names what
it cannot read instead of failing the build that every later run depends on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cdcgen.adapters.files import write_atomic
from cdcgen.core.replication_record import ReplicationRecord
from cdcgen.core.time import naive_as_utc
from cdcgen.core.user_text import file_name

log = logging.getLogger(__name__)

#: Under the report directory: one folder per sink table, one record per run.
RECORDS_DIR = "replication"


def save_record(report_dir: Path, record: ReplicationRecord) -> Path:
    """``record`` under its sink table's folder, named by its end (so names sort by it)."""
    if record.ended_at is None:
        raise ValueError(f"replication record of {record.sink_table}: its run has not ended")
    folder = Path(report_dir) / RECORDS_DIR / file_name(record.sink_table)
    path = folder / f"{record.ended_at.replace(':', '')}-{file_name(record.run_id)}.json"
    write_atomic(path, json.dumps(record.to_json(), indent=1, sort_keys=True) + "\n")
    return path


def keep_newest(saved: Path, keep: int) -> list[Path]:
    """Remove the oldest records beyond ``keep`` of the sink table of ``saved`` (the
    record just saved, never removed); returns those removed.

    Every save, of any kind, reads every replication record to draw the index: without a
    bound, that work grew with each run of every sink. File names start with the run's
    end time (ISO, UTC), so they sort by it."""
    oldest_first = sorted(p for p in saved.parent.glob("*.json") if not p.name.startswith("."))
    excess = max(0, len(oldest_first) - keep)
    removed = [p for p in oldest_first if p != saved][:excess]
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


def load_records(report_dir: Path) -> tuple[list[ReplicationRecord], list[str]]:
    """Every run record, by sink table then time, and one message per file that holds no
    record (shown on the page; a file that is not JSON at all is only logged: one being
    written is never seen, so it is no record)."""
    root = Path(report_dir) / RECORDS_DIR
    records: list[ReplicationRecord] = []
    problems: list[str] = []
    for path in sorted(root.glob("*/*.json")) if root.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("unreadable replication record %s: %s", path, exc)
            continue
        try:
            records.append(parse_record(data))
        except ValueError as exc:
            problems.append(str(exc))
    return records, problems


def parse_record(data: Any) -> ReplicationRecord:
    """The record a file's JSON value holds; ValueError naming it if it holds none."""
    if not isinstance(data, Mapping):
        raise ValueError(f"replication record is not an object: {data!r:.80}")
    try:
        return ReplicationRecord.from_json(data)
    except ValidationError as exc:
        errors = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors()
        )
        sink, run = data.get("sink_table", "?"), data.get("run_id", "?")
        raise ValueError(f"replication record of {sink}, run {run}: {errors}") from None


@dataclass(frozen=True)
class RejectedChange:
    """A change the sink refused or the replay model could not express."""

    write_time: str
    cdc_time: str
    stream_id: str
    reason: str


@dataclass(frozen=True)
class ReplicationRun:
    """One apply or bootstrap of one sink table, as its record tells it."""

    kind: str
    source_table: str
    sink_table: str
    run_id: str
    ended_at: datetime
    status: str
    consistent_until: datetime | None = None
    bootstrapped_at: datetime | None = None
    lag_seconds: float | None = None
    applied_from: datetime | None = None
    applied_log_rows: int = 0
    applied_batches: int = 0
    lake_version: int | None = None
    copied_rows: int | None = None
    truncated: bool = False
    #: The first rejected changes (a run keeps a bounded number), and how many in all.
    rejected: tuple[RejectedChange, ...] = ()
    rejected_count: int = 0

    @property
    def is_bootstrap(self) -> bool:
        return self.kind == "bootstrap"


def _time(value: str | None) -> datetime | None:
    return None if value is None else naive_as_utc(datetime.fromisoformat(value))


def read_run(record: ReplicationRecord) -> ReplicationRun:
    """The page's view of one record; ValueError naming the record if it cannot be read."""
    try:
        ended_at = _time(record.ended_at)
        if ended_at is None:
            raise ValueError("no ended_at")
        return ReplicationRun(
            kind=record.kind,
            source_table=record.source_table,
            sink_table=record.sink_table,
            run_id=record.run_id,
            ended_at=ended_at,
            status=record.status,
            consistent_until=_time(record.consistent_until),
            bootstrapped_at=_time(record.bootstrapped_at),
            lag_seconds=record.lag_seconds,
            applied_from=_time(record.applied_from),
            applied_log_rows=record.applied_log_rows,
            applied_batches=record.applied_batches,
            lake_version=record.lake_version,
            copied_rows=record.copied_rows,
            truncated=record.truncated,
            rejected=tuple(
                RejectedChange(r.write_time, r.cdc_time, r.stream_id, r.reason)
                for r in record.rejected
            ),
            rejected_count=record.rejected_count or len(record.rejected),
        )
    except (TypeError, ValueError) as exc:
        sink, run = record.sink_table, record.run_id or "?"
        raise ValueError(f"replication record of {sink}, run {run}: {exc!r}") from None


def read_runs(records: Sequence[ReplicationRecord]) -> tuple[list[ReplicationRun], list[str]]:
    """Every readable record as a run, oldest first, and one message per record that is
    not (shown on the page: a bad record must not hide the others, nor stop the build)."""
    runs: list[ReplicationRun] = []
    problems: list[str] = []
    for record in records:
        try:
            runs.append(read_run(record))
        except ValueError as exc:
            problems.append(str(exc))
    runs.sort(key=lambda r: (r.ended_at, r.run_id))
    return runs, problems


def load_runs(report_dir: Path) -> tuple[list[ReplicationRun], list[str]]:
    """Every record the page can show as a run, oldest first, and one message for each
    file or record it cannot."""
    records, unread = load_records(report_dir)
    runs, problems = read_runs(records)
    return runs, [*unread, *problems]
