"""The run records the report site is rendered from: plain dataclasses, and their names.

Tasks (validate, publish, extract changes) describe what they saw in one of these
records and write it as JSON (:mod:`.record_json`) into ``<report_dir>/runs/``; the
site is rendered from those files alone.  Keeping the records plain data (no GX objects, no
TopologyDescription) means the pages can be rebuilt anywhere — by the API server
plugin, ``make demo``, a test — without Spark, GX or a database.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum


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
    #: The generations table version validation read, and its description's SHA-256.
    lake_version: int | None = None
    description_sha256: str = ""

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
    #: The lake table versions the run committed (read them back with time travel).
    lake_versions: tuple[int, ...] = ()

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


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(text: str) -> str:
    """A file-name-safe form of an id or run id (stable: pages link to it)."""
    cleaned = _UNSAFE.sub("-", text).strip("-.")
    return cleaned[:120] or "unnamed"


def _stamp(moment: datetime) -> str:
    """``20261122T101500123456Z``: the UTC time in record keys and page names."""
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def record_key(record: RunRecord) -> str:
    """The record's file stem.

    A generation run is keyed by generation and DAG run, so a later step of the
    same run (publication) updates the record the validation wrote; a changes run
    by its creation time and run id.
    """
    if isinstance(record, GenerationReport):
        return generation_record_key(record.generation_time, record.generation_id, record.run_id)
    name = slug(record.run_id or "manual")
    return f"changes-{_stamp(record.created_at)}-{name}"


def generation_record_key(generation_time: datetime, generation_id: str, run_id: str) -> str:
    """The file stem of a generation's record in one DAG run (see :func:`record_key`)."""
    stamp = _stamp(generation_time)
    return f"generation-{stamp}-{slug(generation_id)}-{slug(run_id or 'manual')}"


def generation_page_name(record: GenerationReport) -> str:
    """File name of the generation's summary page under ``generations/``."""
    return f"{_stamp(record.generation_time)}-{slug(record.generation_id)}.html"
