"""Which generations can still hold data: the V1 rewrite's selection and expiry.

ScyllaDB's own predicate (``rewrite_streams_descriptions`` in ``cdc/generation.cc``): a
CDC log table holds no row older than ``max(created, now - ttl) - 10 s`` (``ttl == 0``:
rows never expire, only the creation time bounds them; the 10 s absorb clock drift).

* The V1 -> V2 rewrite copies every V1 generation that may still hold data: it finds the
  first timestamp ``ts`` such that some table may hold rows older than ``ts``, steps back
  one (the generation operating before ``ts`` may hold rows too) and rewrites from there
  to the end. The step back happens even when no timestamp qualifies, so the newest
  generation, which operates until now, is always rewritten.
* Expiry (the seed's TODO, which ScyllaDB never does): a generation ``g`` superseded at
  ``T`` can hold rows only from before ``T``; once every table's bound has passed ``T``,
  ``g`` is empty everywhere and its ``expired`` column may be set.
* Pruning (when configured): the description rows of a generation expired long enough
  ago may be deleted, never the newest one's, nor those of a generation a consumer of
  ours still reads (its successor starts after the earliest watermark).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from cdcgen.core.cdc_log import CdcTable

CLOCK_DRIFT = timedelta(seconds=10)
"""ScyllaDB subtracts 10 s "to account for some possible clock drift"."""


def oldest_possible_row(table: CdcTable, now: datetime) -> datetime | None:
    """No row of ``table`` is older than this instant (``None``: no bound at all)."""
    expiry = now - timedelta(seconds=table.ttl_seconds) if table.ttl_seconds > 0 else None
    bounds = [b for b in (table.created, expiry) if b is not None]
    return max(bounds) - CLOCK_DRIFT if bounds else None


def generations_to_rewrite(
    timestamps: Iterable[datetime], tables: Sequence[CdcTable], now: datetime
) -> list[datetime]:
    """The V1 generations ScyllaDB rewrites to the V2 tables, oldest first.

    With no CDC table at all nothing is rewritten (ScyllaDB writes only the marker).
    """
    ordered = sorted(set(timestamps))
    if not tables:
        return []
    bounds = [oldest_possible_row(table, now) for table in tables]

    def some_table_may_hold_rows_before(ts: datetime) -> bool:
        return any(bound is None or bound < ts for bound in bounds)

    first = next(
        (i for i, ts in enumerate(ordered) if some_table_may_hold_rows_before(ts)), len(ordered)
    )
    if first > 0:
        first -= 1  # the generation operating just before may hold rows too
    return ordered[first:]


def empty_from(table: CdcTable, superseded_at: datetime) -> datetime | None:
    """When rows written before ``superseded_at`` are gone from ``table``.

    ``None``: never (TTL 0 and created before). A table created after ``superseded_at``
    (+ drift) never held such rows: the answer is ``superseded_at``.
    """
    if table.created is not None and table.created - CLOCK_DRIFT >= superseded_at:
        return superseded_at
    if table.ttl_seconds <= 0:
        return None
    return superseded_at + timedelta(seconds=table.ttl_seconds) + CLOCK_DRIFT


def expiry_time(superseded_at: datetime, tables: Iterable[CdcTable]) -> datetime | None:
    """When a generation superseded at ``superseded_at`` holds no data in any CDC table.

    The latest of the per-table instants; ``None`` if some table keeps rows forever.
    With no CDC table at all nothing can hold its data: it expires when superseded.
    Deterministic (independent of "now"), so re-running expiry writes the same value.
    """
    latest = superseded_at
    for table in tables:
        instant = empty_from(table, superseded_at)
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


def prunable(
    published: Sequence[tuple[datetime, datetime | None]],
    now: datetime,
    after: timedelta,
    needed_from: datetime | None = None,
) -> list[datetime]:
    """Generations (``(time, expired)`` as published) whose description rows may go:
    expired at least ``after`` before ``now``, superseded (never the newest), and over
    before ``needed_from``, the earliest instant a consumer still reads from (a table's
    watermark; ``None``: no consumer state is known)."""
    result = []
    for (time, expired), (following, _) in itertools.pairwise(sorted(published)):
        if expired is None or expired > now - after:
            continue
        if needed_from is not None and following > needed_from:
            continue
        result.append(time)
    return result
