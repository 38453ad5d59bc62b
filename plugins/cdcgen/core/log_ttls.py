"""Which CDC TTL the log rows not extracted yet were written with.

ScyllaDB writes each log row with the CDC TTL in effect at that moment, so an ``ALTER
TABLE ... WITH cdc = {'ttl': ...}`` that raises the TTL (or removes it) leaves the rows
logged before it with the old one. A changes run only sees the TTL in effect when it
starts. What the runs know, recorded with the watermark (:class:`LogTtls`):

* ``seen``: the TTL the latest run saw;
* ``since``: when the first run that saw it started. The ALTER that set it came
  before, so every row logged from then on carries it, or a later TTL, which the next
  run sees;
* ``before``: the shortest TTL a row logged after the watermark but before ``since``
  may carry: what was seen before ``seen``.

A run goes by the shortest TTL a row after the watermark may carry (:meth:`LogTtls.bound`).
What nothing records is a TTL changed twice between two runs' starts: the one in
between is never seen. TTLs are seconds as ScyllaDB gives them, 0 for none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


def ttl_seconds(ttl: timedelta | None) -> int:
    """A CDC TTL as ScyllaDB's ``cdc = {'ttl': ...}`` gives it: seconds, 0 if none."""
    return 0 if ttl is None else int(ttl.total_seconds())


def shortest(*seconds: int) -> int:
    """The shortest of some TTLs, 0 (none) only when every one is 0."""
    return min((s for s in seconds if s > 0), default=0)


@dataclass(frozen=True)
class LogTtls:
    """What the runs know of the TTLs of the rows after the watermark (see the module)."""

    before: int
    seen: int
    since: datetime

    def bound(self, current: timedelta | None, watermark: datetime | None) -> timedelta | None:
        """The shortest TTL a row logged after ``watermark`` may carry, the table's being
        ``current`` now; None when none of them expires."""
        before = self.before if watermark is None or watermark < self.since else 0
        seconds = shortest(ttl_seconds(current), self.seen, before)
        return timedelta(seconds=seconds) if seconds else None

    def after_run(
        self, current: timedelta | None, started: datetime, watermark: datetime
    ) -> LogTtls:
        """What a run that started at ``started`` and saw ``current`` records with its
        new ``watermark``."""
        now = ttl_seconds(current)
        before = self.before if watermark < self.since else 0
        if now == self.seen:  # unchanged: rows from ``since`` on carry it
            return LogTtls(before or now, now, self.since)
        # Changed since the last run started: rows logged up to this run's start may
        # carry what was seen before, or anything before that still after the watermark.
        return LogTtls(shortest(self.seen, before), now, started)


def unextracted_ttl(
    current: timedelta | None, recorded: LogTtls | None, watermark: datetime | None
) -> timedelta | None:
    """The TTL that bounds how long the log keeps the rows after ``watermark``."""
    if recorded is None:
        return current if current is not None and current > timedelta(0) else None
    return recorded.bound(current, watermark)


def recorded_after_run(
    current: timedelta | None,
    recorded: LogTtls | None,
    started: datetime,
    watermark: datetime,
) -> LogTtls:
    """What a run records with its new ``watermark``; a table's first record knows
    nothing of the TTLs before its run."""
    if recorded is None:
        now = ttl_seconds(current)
        return LogTtls(now, now, started)
    return recorded.after_run(current, started, watermark)
