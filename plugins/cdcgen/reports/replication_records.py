"""Replication run records: one JSON file per run and sink table, the replication page's input.

Layout under the report directory::

    replication/<sink keyspace.table>/<ended at>-<run id>.json

A record holds names, times and counts (source and sink table, consistency point, lag,
changes applied, changes rejected and why), never a credential. Written whole through
a rename, so a reader never sees half a record. The records are plain dicts, as the
replication run builds them; :func:`read_run` gives the page a typed view, and names
what it cannot read instead of failing the build that every later run depends on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cdcgen.adapters.files import write_atomic
from cdcgen.core.time import naive_as_utc
from cdcgen.core.user_text import file_name

log = logging.getLogger(__name__)

#: Under the report directory: one folder per sink table, one record per run.
RECORDS_DIR = "replication"


def save_record(report_dir: Path, record: dict[str, Any]) -> Path:
    folder = Path(report_dir) / RECORDS_DIR / file_name(record["sink_table"])
    path = folder / f"{record['ended_at'].replace(':', '')}-{file_name(record['run_id'])}.json"
    write_atomic(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
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


def load_records(report_dir: Path) -> list[dict[str, Any]]:
    """Every run record, by sink table then time."""
    root = Path(report_dir) / RECORDS_DIR
    records = []
    for path in sorted(root.glob("*/*.json")) if root.is_dir() else []:
        try:
            records.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            log.warning("unreadable replication record %s: %s", path, exc)
    return records


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


def _time(value: Any) -> datetime | None:
    return None if value is None else naive_as_utc(datetime.fromisoformat(value))


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def read_run(record: Mapping[str, Any]) -> ReplicationRun:
    """The typed view of one record; ValueError naming the record if it cannot be read."""
    try:
        ended_at = _time(record["ended_at"])
        if ended_at is None:
            raise ValueError("no ended_at")
        lag = record.get("lag_seconds")
        return ReplicationRun(
            kind=str(record.get("kind", "apply")),
            source_table=str(record["source_table"]),
            sink_table=str(record["sink_table"]),
            run_id=str(record.get("run_id", "")),
            ended_at=ended_at,
            status=str(record.get("status", "ok")),
            consistent_until=_time(record.get("consistent_until")),
            bootstrapped_at=_time(record.get("bootstrapped_at")),
            lag_seconds=None if lag is None else float(lag),
            applied_from=_time(record.get("applied_from")),
            applied_log_rows=int(record.get("applied_log_rows") or 0),
            applied_batches=int(record.get("applied_batches") or 0),
            lake_version=_int(record.get("lake_version")),
            copied_rows=_int(record.get("copied_rows")),
            truncated=bool(record.get("truncated", False)),
            rejected=tuple(
                RejectedChange(
                    str(r.get("write_time")),
                    str(r.get("cdc_time")),
                    str(r.get("stream_id")),
                    str(r.get("reason")),
                )
                for r in record.get("rejected") or ()
            ),
            rejected_count=int(record.get("rejected_count") or len(record.get("rejected") or ())),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        sink, run = record.get("sink_table", "?"), record.get("run_id", "?")
        raise ValueError(f"replication record of {sink}, run {run}: {exc!r}") from None


def read_runs(records: Sequence[Any]) -> tuple[list[ReplicationRun], list[str]]:
    """Every readable record as a run, oldest first, and one message per record that is
    not (shown on the page: a bad record must not hide the others, nor stop the build)."""
    runs: list[ReplicationRun] = []
    problems: list[str] = []
    for record in records:
        try:
            if not isinstance(record, Mapping):
                raise ValueError(f"replication record is not an object: {record!r:.80}")
            runs.append(read_run(record))
        except ValueError as exc:
            problems.append(str(exc))
    runs.sort(key=lambda r: (r.ended_at, r.run_id))
    return runs, problems
