"""Set ``expired`` on published generations no CDC table can hold data of anymore.

The seed's TODO, which ScyllaDB never does (its description tables grow without bound).
``expired`` is the instant from which the generation is empty in every CDC table
(:func:`cdcgen.core.retention.expiry_time`); the newest generation is never expired; a
value already set is left alone, so re-running writes nothing new.

:func:`prune_descriptions` deletes the description rows of generations
:func:`cdcgen.core.retention.prunable` allows, in the reverse of publication's order:
the timestamp row first, then the streams partition, so no reader ever sees a timestamp
whose streams are gone. A run killed between the two leaves a streams partition with no
timestamp older than every published generation; the next run deletes it too (a newer
one may be a publication in progress and is never touched).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from cdcgen.adapters.publisher import STREAMS_V2, TIMESTAMPS
from cdcgen.core.cdc_log import CdcTable
from cdcgen.core.retention import Expiry, expirations, prunable
from cdcgen.core.time import naive_as_utc, truncate_to_millis
from cdcgen.schema import GENERATION_TIMESTAMPS_KEY as KEY

if TYPE_CHECKING:
    from cdcgen.adapters.publisher import CqlDescriptionPublisher


def expire_superseded(
    publisher: CqlDescriptionPublisher,
    cdc_tables: Sequence[CdcTable],
    *,
    now: datetime | None = None,
) -> list[Expiry]:
    """Mark what :func:`~cdcgen.core.retention.expirations` says; returns what was marked now."""
    clock = (now or datetime.now(UTC)).replace(microsecond=0)
    published = publisher.published_generations()
    pending = {g.time for g in published if g.expired is None}
    marked = [
        e
        for e in expirations([g.time for g in published], cdc_tables, clock)
        if e.timestamp in pending
    ]
    for expiry in marked:
        publisher.mark_expired(expiry.timestamp, truncate_to_millis(expiry.expired))
    return marked


def prune_descriptions(
    publisher: CqlDescriptionPublisher,
    after: timedelta,
    *,
    needed_from: datetime | None = None,
    now: datetime | None = None,
) -> list[datetime]:
    """Delete what :func:`~cdcgen.core.retention.prunable` allows (and orphaned streams
    partitions of an interrupted earlier prune); returns the generations deleted."""
    clock = now or datetime.now(UTC)
    published = publisher.published_generations()
    chosen = prunable([(g.time, g.expired) for g in published], clock, after, needed_from)
    keyspace, run = publisher.keyspace, publisher.run
    for time in chosen:
        run(f"DELETE FROM {keyspace}.{TIMESTAMPS} WHERE key = ? AND time = ?", (KEY, time))
        run(f"DELETE FROM {keyspace}.{STREAMS_V2} WHERE time = ?", (time,))
    remaining = [g.time for g in published if g.time not in chosen]
    if remaining:
        partitions = run(f"SELECT DISTINCT time FROM {keyspace}.{STREAMS_V2}")
        orphans = sorted(
            t
            for t in (naive_as_utc(r.time) for r in partitions)
            if t < min(remaining) and t not in chosen
        )
        for time in orphans:
            run(f"DELETE FROM {keyspace}.{STREAMS_V2} WHERE time = ?", (time,))
        chosen = sorted([*chosen, *orphans])
    return chosen
