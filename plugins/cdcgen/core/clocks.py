"""Every node's clock against an instant: the one rule behind every wait of the pipeline.

A generation with timestamp ``T`` can still receive writes from a node whose clock is
behind ``T + leeway`` (design doc section 4); a window ``[start, end)`` of a CDC log is
complete only when no node can still write below ``end``, i.e. every clock is past
``end + leeway + confidence window`` (the confidence window covers writes in flight, as
scylla-cdc-java/go/rust do). Both waits are :class:`ClockCheck` against the instant the
functions below give. A node whose clock could not be read counts as not past: closing
on a guess would lose the rows that node may still accept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from cdcgen.core.time import as_utc, floor_ms


@dataclass(frozen=True)
class NodeClock:
    """One node's clock reading (UTC), or why it could not be read."""

    node: str
    clock: datetime | None
    error: str | None = None

    @property
    def reading(self) -> datetime | None:
        """The clock in UTC, or ``None`` when it could not be read."""
        if self.clock is None or self.error:
            return None
        return as_utc(self.clock, f"clock of node {self.node}")


def generation_started_at(timestamp: datetime, leeway: timedelta) -> datetime:
    """Once every clock is past this, no node writes before the generation anymore."""
    return as_utc(timestamp) + leeway


def window_closes_at(end: datetime, leeway: timedelta, confidence_window: timedelta) -> datetime:
    """Once every clock is past this, no node can still write a change below ``end``."""
    return as_utc(end) + leeway + confidence_window


@dataclass(frozen=True)
class ClockCheck:
    """One reading of every node's clock against the instant they must all have passed."""

    target: datetime
    clocks: tuple[NodeClock, ...]

    @property
    def lagging(self) -> tuple[NodeClock, ...]:
        """Nodes that could not be read or whose clock is still before ``target``."""
        return tuple(c for c in self.clocks if (r := c.reading) is None or r < self.target)

    @property
    def ready(self) -> bool:
        return bool(self.clocks) and not self.lagging

    def shortfall(self) -> float | None:
        """Seconds the furthest readable lagging clock still has to go (None: none readable)."""
        gaps = [
            (self.target - reading).total_seconds()
            for reading in (c.reading for c in self.lagging)
            if reading is not None
        ]
        return max(gaps, default=None)

    def why_not(self) -> str | None:
        """``None`` when every node is past the target, else the first node that is not."""
        if self.ready:
            return None
        return self.describe(first_only=True)

    def describe(self, *, first_only: bool = False) -> str:
        """One clause per lagging node, naming it; used in logs and failure messages."""
        if not self.clocks:
            return "no node clock was read"
        parts = []
        for c in self.lagging:
            clock = c.reading
            if clock is None:
                parts.append(f"node {c.node} unreachable ({c.error or 'no clock value'})")
            else:
                short = (self.target - clock).total_seconds()
                parts.append(
                    f"node {c.node} clock {clock.isoformat()} is {short:.3f} s "
                    f"before {self.target.isoformat()}"
                )
            if first_only:
                break
        return "; ".join(parts) if parts else "every node has passed the target"


def closed_until(
    clocks: Sequence[NodeClock], leeway: timedelta, confidence_window: timedelta
) -> datetime | None:
    """The latest window end every node's clock has closed (:func:`window_closes_at`
    read backwards), to the millisecond; ``None`` when a clock could not be read, since
    that node may still accept writes anywhere past the last end known closed."""
    readings = [clock.reading for clock in clocks]
    if not readings or any(reading is None for reading in readings):
        return None
    earliest = min(reading for reading in readings if reading is not None)
    return floor_ms(earliest - leeway - confidence_window)
