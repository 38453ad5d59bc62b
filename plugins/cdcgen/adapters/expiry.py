"""Set ``expired`` on published generations no CDC table can hold data of anymore.

The seed's TODO, which ScyllaDB never does (its description tables grow without bound).
``expired`` is the instant from which the generation is empty in every CDC table
(:func:`cdcgen.core.retention.expiry_time`); the newest generation is never expired; a
value already set is left alone, so re-running writes nothing new.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from cdcgen.core.cdc_log import CdcTable
from cdcgen.core.retention import Expiry, expirations
from cdcgen.core.time import truncate_to_millis

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
