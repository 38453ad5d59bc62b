"""The run records the report site is rendered from: plain dataclasses and their JSON form.

Tasks (validate, publish, extract changes) describe what they saw in one of these
records and write it as JSON into ``<report_dir>/runs/``; the site is rendered
from those files alone.  Keeping the records plain data (no GX objects, no
TopologyDescription) means the pages can be rebuilt anywhere — by the API server
plugin, ``make demo``, a test — without Spark, GX or a database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

#: Bumped when a field changes meaning; readers refuse records from the future.
SCHEMA_VERSION = 1


class RecordError(ValueError):
    """A run record that cannot be read (bad JSON, missing field, newer schema)."""


class NotARecord(RecordError):
    """JSON that is not a run record at all (no ``kind``): skipped, not reported."""


class RunStatus(StrEnum):
    SUCCESS = "success"
    FAILED = "failed"
    RUNNING = "running"


@dataclass(frozen=True)
class ExpectationOutcome:
    """One expectation's verdict, as a person reads it in the pass/fail table."""

    name: str
    passed: bool
    details: str = ""
    column: str | None = None


@dataclass(frozen=True)
class RingEntry:
    """One vnode of a generation: the range ``(range_start, range_end]`` and its streams.

    ``node`` is the node that owned ``range_end`` when the generation was made
    ("" when unknown); ``stream_tokens`` are the tokens of its streams in shard
    order (optional: only the ring picture's stream dots need them).
    """

    range_start: int
    range_end: int
    node: str
    shard_count: int
    stream_tokens: tuple[int, ...] = ()


@dataclass(frozen=True)
class GenerationCounts:
    entries: int
    streams: int
    nodes: int
    shards: int


@dataclass(frozen=True)
class GenerationReport:
    """What one run learned about one generation: counts, expectations, ring."""

    generation_id: str
    generation_time: datetime
    status: RunStatus
    expectations: tuple[ExpectationOutcome, ...] = ()
    ring: tuple[RingEntry, ...] = ()
    counts: GenerationCounts | None = None
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    dag_id: str = ""
    run_id: str = ""
    published: bool = False
    #: Path of the GX Data Docs page for this run, relative to the report dir (or absolute).
    data_docs_path: str = ""
    source: str = ""
    notes: tuple[str, ...] = ()

    kind = "generation"

    def resolved_counts(self) -> GenerationCounts:
        """The recorded counts, or counts derived from the ring when none were recorded."""
        if self.counts is not None:
            return self.counts
        return GenerationCounts(
            entries=len(self.ring),
            streams=sum(entry.shard_count for entry in self.ring),
            nodes=len({entry.node for entry in self.ring}),
            shards=sum(max_shards_per_node(self.ring).values()),
        )

    @property
    def expectations_passed(self) -> int:
        return sum(1 for outcome in self.expectations if outcome.passed)


@dataclass(frozen=True)
class TableLag:
    """Where one CDC log table's consumer stands at the end of a changes run."""

    keyspace: str
    table: str
    watermark: datetime | None
    lag_seconds: float | None
    rows: int = 0

    @property
    def qualified_name(self) -> str:
        return f"{self.keyspace}.{self.table}"


@dataclass(frozen=True)
class GenerationRows:
    """Rows read from one table in one generation during one run."""

    generation_time: datetime
    generation_id: str
    table: str
    rows: int


@dataclass(frozen=True)
class ChangesReport:
    """One changes-extraction run: a window, per-table lag/watermark, rows per generation."""

    status: RunStatus
    window_start: datetime | None = None
    window_end: datetime | None = None
    tables: tuple[TableLag, ...] = ()
    rows_per_generation: tuple[GenerationRows, ...] = ()
    expectations: tuple[ExpectationOutcome, ...] = ()
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    dag_id: str = ""
    run_id: str = ""
    data_docs_path: str = ""
    notes: tuple[str, ...] = ()

    kind = "changes"

    @property
    def total_rows(self) -> int:
        return sum(item.rows for item in self.rows_per_generation)


RunRecord = GenerationReport | ChangesReport


def max_shards_per_node(ring: Sequence[RingEntry]) -> dict[str, int]:
    """Shard count of each node (the largest seen on its ranges)."""
    shards: dict[str, int] = {}
    for entry in ring:
        shards[entry.node] = max(shards.get(entry.node, 0), entry.shard_count)
    return shards


# --- JSON -------------------------------------------------------------------------------


def _time(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat()


def _parse_time(value: Any, what: str) -> datetime:
    if not isinstance(value, str):
        raise RecordError(f"{what}: expected an ISO timestamp, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise RecordError(f"{what}: not an ISO timestamp: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _optional_time(value: Any, what: str) -> datetime | None:
    return None if value is None else _parse_time(value, what)


def _expectation_json(outcome: ExpectationOutcome) -> dict[str, Any]:
    return {
        "name": outcome.name,
        "passed": outcome.passed,
        "details": outcome.details,
        "column": outcome.column,
    }


def to_json(record: RunRecord) -> dict[str, Any]:
    """The JSON-ready dict of a record (ints stay ints: tokens need all 64 bits)."""
    common = {
        "schema": SCHEMA_VERSION,
        "kind": record.kind,
        "status": record.status.value,
        "created_at": _time(record.created_at),
        "dag_id": record.dag_id,
        "run_id": record.run_id,
        "data_docs_path": record.data_docs_path,
        "expectations": [_expectation_json(o) for o in record.expectations],
        "notes": list(record.notes),
    }
    if isinstance(record, GenerationReport):
        counts = record.counts
        return {
            **common,
            "generation_id": record.generation_id,
            "generation_time": _time(record.generation_time),
            "published": record.published,
            "source": record.source,
            "counts": None
            if counts is None
            else {
                "entries": counts.entries,
                "streams": counts.streams,
                "nodes": counts.nodes,
                "shards": counts.shards,
            },
            "ring": [
                [e.range_start, e.range_end, e.node, e.shard_count, list(e.stream_tokens)]
                for e in record.ring
            ],
        }
    return {
        **common,
        "window_start": _time(record.window_start),
        "window_end": _time(record.window_end),
        "tables": [
            {
                "keyspace": t.keyspace,
                "table": t.table,
                "watermark": _time(t.watermark),
                "lag_seconds": t.lag_seconds,
                "rows": t.rows,
            }
            for t in record.tables
        ],
        "rows_per_generation": [
            {
                "generation_time": _time(r.generation_time),
                "generation_id": r.generation_id,
                "table": r.table,
                "rows": r.rows,
            }
            for r in record.rows_per_generation
        ],
    }


def _expectations(raw: Any) -> tuple[ExpectationOutcome, ...]:
    return tuple(
        ExpectationOutcome(
            name=str(item["name"]),
            passed=bool(item["passed"]),
            details=str(item.get("details") or ""),
            column=item.get("column"),
        )
        for item in raw or ()
    )


def _ring_entry(raw: Sequence[Any]) -> RingEntry:
    start, end, node, shards, *rest = raw
    tokens = tuple(int(t) for t in rest[0]) if rest else ()
    return RingEntry(int(start), int(end), str(node), int(shards), tokens)


def from_json(data: Mapping[str, Any]) -> RunRecord:
    """Parse a record; raises :class:`RecordError` naming what is wrong."""
    try:
        schema = int(data.get("schema", 0))
        if schema > SCHEMA_VERSION:
            raise RecordError(f"record schema {schema} is newer than {SCHEMA_VERSION}")
        kind = data["kind"]
        status = RunStatus(data["status"])
        common: dict[str, Any] = {
            "status": status,
            "created_at": _parse_time(data["created_at"], "created_at"),
            "dag_id": str(data.get("dag_id") or ""),
            "run_id": str(data.get("run_id") or ""),
            "data_docs_path": str(data.get("data_docs_path") or ""),
            "expectations": _expectations(data.get("expectations")),
            "notes": tuple(str(n) for n in data.get("notes") or ()),
        }
        if kind == GenerationReport.kind:
            raw_counts = data.get("counts")
            return GenerationReport(
                generation_id=str(data["generation_id"]),
                generation_time=_parse_time(data["generation_time"], "generation_time"),
                published=bool(data.get("published", False)),
                source=str(data.get("source") or ""),
                counts=None if raw_counts is None else GenerationCounts(**raw_counts),
                ring=tuple(_ring_entry(item) for item in data.get("ring") or ()),
                **common,
            )
        if kind == ChangesReport.kind:
            return ChangesReport(
                window_start=_optional_time(data.get("window_start"), "window_start"),
                window_end=_optional_time(data.get("window_end"), "window_end"),
                tables=tuple(
                    TableLag(
                        keyspace=str(t["keyspace"]),
                        table=str(t["table"]),
                        watermark=_optional_time(t.get("watermark"), "watermark"),
                        lag_seconds=None
                        if t.get("lag_seconds") is None
                        else float(t["lag_seconds"]),
                        rows=int(t.get("rows") or 0),
                    )
                    for t in data.get("tables") or ()
                ),
                rows_per_generation=tuple(
                    GenerationRows(
                        generation_time=_parse_time(r["generation_time"], "generation_time"),
                        generation_id=str(r.get("generation_id") or ""),
                        table=str(r["table"]),
                        rows=int(r["rows"]),
                    )
                    for r in data.get("rows_per_generation") or ()
                ),
                **common,
            )
        raise RecordError(f"unknown record kind {kind!r}")
    except RecordError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordError(f"malformed run record: {exc!r}") from exc


def dumps(record: RunRecord) -> str:
    return json.dumps(to_json(record), indent=1, sort_keys=True) + "\n"


def loads(text: str) -> RunRecord:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"not JSON: {exc}") from exc
    if not isinstance(data, dict) or "kind" not in data:
        raise NotARecord("not a run record (no 'kind')")
    return from_json(data)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(text: str) -> str:
    """A file-name-safe form of an id or run id (stable: pages link to it)."""
    cleaned = _UNSAFE.sub("-", text).strip("-.")
    return cleaned[:120] or "unnamed"


def record_key(record: RunRecord) -> str:
    """The record's file stem.

    A generation run is keyed by generation and DAG run, so a later step of the
    same run (publication) updates the record the validation wrote; a changes run
    by its creation time and run id.
    """
    name = slug(record.run_id or "manual")
    if isinstance(record, GenerationReport):
        gen_stamp = record.generation_time.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        return f"generation-{gen_stamp}-{slug(record.generation_id)}-{name}"
    stamp = record.created_at.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return f"changes-{stamp}-{name}"


def generation_page_name(record: GenerationReport) -> str:
    """File name of the generation's summary page under ``generations/``."""
    gen_stamp = record.generation_time.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return f"{gen_stamp}-{slug(record.generation_id)}.html"
