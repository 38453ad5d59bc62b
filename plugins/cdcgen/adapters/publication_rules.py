"""Pure rules of publication: batching, retention (expiry) and which V1 generations to copy.

Kept free of the driver so each rule is unit-tested on plain values.

Retention follows ScyllaDB's own predicate (``rewrite_streams_descriptions`` in
``cdc/generation.cc``): a CDC log table holds no row older than
``max(created, now - ttl) - 10 s`` (``ttl == 0``: rows never expire, only the creation
time bounds them; the 10 s absorb clock drift). A generation ``g`` superseded at ``T``
(the next generation's timestamp) can hold rows only from before ``T``; so once every
CDC table's bound has reached ``T``, ``g`` is empty everywhere.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

CLOCK_DRIFT = timedelta(seconds=10)
"""ScyllaDB subtracts 10 s "to account for some possible clock drift"."""

DEFAULT_BATCH_BYTES = 1_000_000
"""About 1 MB per batch: ScyllaDB's bound for one description mutation."""

_ROW_OVERHEAD = 64  # key, clustering and set framing of one row, roughly


@dataclass(frozen=True)
class CdcTable:
    """A CDC-enabled table as retention sees it.

    ``ttl_seconds`` is the table's ``cdc = {'ttl': N}`` (0: rows never expire);
    ``created`` the log table's creation time (ScyllaDB reads it from the schema id, a
    time UUID), ``None`` when unknown (then only the TTL bounds its rows).
    """

    name: str
    ttl_seconds: int
    created: datetime | None = None

    def oldest_possible_row(self, now: datetime) -> datetime | None:
        """No row of this table is older than this instant (``None``: no bound at all)."""
        bounds = [b for b in (self.created, _minus(now, self.ttl_seconds)) if b is not None]
        return max(bounds) - CLOCK_DRIFT if bounds else None

    def empty_before(self, superseded_at: datetime) -> datetime | None:
        """When rows written before ``superseded_at`` are gone from this table.

        ``None``: never (TTL 0 and created before). A table created after
        ``superseded_at`` (+ drift) never held such rows: the answer is ``superseded_at``.
        """
        if self.created is not None and self.created - CLOCK_DRIFT >= superseded_at:
            return superseded_at
        if self.ttl_seconds <= 0:
            return None
        return superseded_at + timedelta(seconds=self.ttl_seconds) + CLOCK_DRIFT


def _minus(now: datetime, ttl_seconds: int) -> datetime | None:
    return now - timedelta(seconds=ttl_seconds) if ttl_seconds > 0 else None


def expiry_time(superseded_at: datetime, tables: Iterable[CdcTable]) -> datetime | None:
    """When a generation superseded at ``superseded_at`` holds no data in any CDC table.

    The latest of the per-table instants; ``None`` if some table keeps rows forever.
    With no CDC table at all nothing can hold its data: it expires when superseded.
    Deterministic (independent of "now"), so re-running expiry writes the same value.
    """
    latest = superseded_at
    for table in tables:
        instant = table.empty_before(superseded_at)
        if instant is None:
            return None
        latest = max(latest, instant)
    return latest


@dataclass(frozen=True)
class Expiry:
    timestamp: datetime
    expired: datetime


def expirations(
    timestamps: Sequence[datetime], tables: Sequence[CdcTable], now: datetime
) -> list[Expiry]:
    """Published generations that are superseded and past every table's TTL at ``now``.

    The newest generation is never expired: nothing supersedes it.
    """
    ordered = sorted(set(timestamps))
    result = []
    for current, following in itertools.pairwise(ordered):
        instant = expiry_time(following, tables)
        if instant is not None and instant <= now:
            result.append(Expiry(current, instant))
    return result


def generations_to_rewrite(
    timestamps: Sequence[datetime], tables: Sequence[CdcTable], now: datetime
) -> list[datetime]:
    """V1 generations that may still hold data, in time order (ScyllaDB's step 5).

    ScyllaDB finds the first timestamp ``ts`` such that some table may hold rows newer
    than ``ts`` (its oldest possible row is before ``ts``), then steps back one: the
    generation operating just before ``ts`` may hold data too. Everything before is
    "too old". With no table, nothing needs rewriting.
    """
    ordered = sorted(set(timestamps))
    if not tables:
        return []

    def some_table_may_hold_rows_after(ts: datetime) -> bool:
        for table in tables:
            bound = table.oldest_possible_row(now)
            if bound is None or bound < ts:
                return True
        return False

    first = next(
        (i for i, ts in enumerate(ordered) if some_table_may_hold_rows_after(ts)), len(ordered)
    )
    if first == len(ordered):
        return []
    return ordered[max(first - 1, 0) :]


def batches_by_size(
    rows: Iterable[tuple[int, Sequence[bytes]]], max_bytes: int = DEFAULT_BATCH_BYTES
) -> list[list[tuple[int, Sequence[bytes]]]]:
    """Group ``(range_end, streams)`` rows into batches of about ``max_bytes`` each.

    A row larger than ``max_bytes`` (an entry with tens of thousands of shards) goes
    alone: rows are never split, a description row is written whole or not at all.
    """
    batches: list[list[tuple[int, Sequence[bytes]]]] = []
    current: list[tuple[int, Sequence[bytes]]] = []
    size = 0
    for row in rows:
        row_size = _ROW_OVERHEAD + sum(len(blob) + 4 for blob in row[1])
        if current and size + row_size > max_bytes:
            batches.append(current)
            current, size = [], 0
        current.append(row)
        size += row_size
    if current:
        batches.append(current)
    return batches
