"""The JSON form of the run records: what ``<report_dir>/runs/*.json`` hold.

Integers stay integers (tokens need all 64 bits), times are ISO text in UTC, and every
record carries a schema version so that a reader refuses a record from a newer writer
instead of misreading it. Reading a malformed file raises :class:`RecordError` naming
what is wrong; JSON that is no record at all is a :class:`NotARecord`, which the site
skips without reporting it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict

from cdcgen.core.time import naive_as_utc
from cdcgen.reports.errors import NotARecord, RecordError
from cdcgen.reports.records import (
    ChangesReport,
    ExpectationOutcome,
    GenerationCounts,
    GenerationReport,
    GenerationRows,
    RingEntry,
    RunRecord,
    RunStatus,
    TableLag,
)

#: Bumped when a field changes meaning; readers refuse records from the future.
SCHEMA_VERSION = 1


def _time(value: datetime | None) -> str | None:
    if value is None:
        return None
    return naive_as_utc(value).isoformat()


def _parse_time(value: Any, what: str) -> datetime:
    if not isinstance(value, str):
        raise RecordError(f"{what}: expected an ISO timestamp, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise RecordError(f"{what}: not an ISO timestamp: {value!r}") from None
    return naive_as_utc(parsed)


def _optional_time(value: Any, what: str) -> datetime | None:
    return None if value is None else _parse_time(value, what)


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


class ExpectationJson(TypedDict):
    """A record's check: its name, verdict, what it observed and the column it is about."""

    name: str
    passed: bool
    details: str
    column: str | None


def _expectation_json(outcome: ExpectationOutcome) -> ExpectationJson:
    return ExpectationJson(
        name=outcome.name, passed=outcome.passed, details=outcome.details, column=outcome.column
    )


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
            "lake_version": record.lake_version,
            "description_sha256": record.description_sha256,
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
                "lake_versions": list(t.lake_versions),
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
                lake_version=_optional_int(data.get("lake_version")),
                description_sha256=str(data.get("description_sha256") or ""),
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
                        lake_versions=tuple(int(v) for v in t.get("lake_versions") or ()),
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
    return encode(to_json(record))


def encode(data: Mapping[str, Any]) -> str:
    """A record's JSON text (or a part kept in a file of its own, like a ring).

    No ``indent``: it switches CPython to its pure-Python encoder, and a generation's
    ring has an entry per range (25,600 in the seed's large cluster)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"


def loads(text: str) -> RunRecord:
    return from_json(decode(text))


def decode(text: str) -> dict[str, Any]:
    """The JSON object of a record file, not yet checked field by field."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"not JSON: {exc}") from exc
    if not isinstance(data, dict) or "kind" not in data:
        raise NotARecord("not a run record (no 'kind')")
    return data
