"""Following a table (continuous mode): one step repeated at a steady pace until a deadline.

A scheduled run extracts what closed since the last one and ends; a follow keeps one
process (and its Spark application, its connection) alive and repeats the same step
every ``every`` until ``until``: extract the windows closed since the last cycle, or
apply what the lake gained since the sink's consistency point. Each cycle is a whole
run with every guarantee of one (closed windows only, a commit before its checkpoints,
then the watermark), so a follow killed anywhere leaves what a killed run leaves, and
the next run, scheduled or following, resumes from the checkpoints.

What a failing cycle does is decided by its error's kind, not by the loop: a terminal
error ends the follow at once; a transient one is left to the next cycle, as a task's
retry would be, until ``max_failures`` cycles in a row failed, when the follow ends on
the last one and its task's own retries take over. A follow whose deadline comes right
after a failed cycle ends on that failure too: it never ends looking healthy on a
cycle that was not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class FollowPace:
    """When cycles start, and how many transient failures in a row a follow survives."""

    until: datetime
    every: timedelta
    max_failures: int = 3

    def __post_init__(self) -> None:
        if self.every <= timedelta(0):
            raise ValueError(f"a follow's cycle period must be positive, not {self.every}")
        if self.max_failures < 1:
            raise ValueError(f"max_failures must be at least 1, not {self.max_failures}")

    def next_start(self, started: datetime) -> datetime | None:
        """When the cycle after one started at ``started`` starts; ``None``: the follow
        ends (that start would be at or past ``until``)."""
        upcoming = started + self.every
        return upcoming if upcoming < self.until else None


def follow(
    step: Callable[[int], T],
    pace: FollowPace,
    *,
    is_terminal: Callable[[BaseException], bool],
    now: Callable[[], datetime],
    sleep: Callable[[float], None],
    on_failure: Callable[[int, BaseException], None] = lambda number, exc: None,
) -> Iterator[T]:
    """Each cycle's result, cycle ``1`` first; the first cycle runs whatever the time.

    ``step(number)`` is one cycle. A cycle that raises a transient error yields nothing
    (``on_failure`` is told); the follow re-raises a terminal error, the
    ``max_failures``-th transient one in a row, or a transient one in its last cycle.
    Memory does not grow with the cycles: results are yielded, not kept.
    """
    number = 0
    failures = 0
    while True:
        started = now()
        number += 1
        failure: Exception | None = None
        try:
            result = step(number)
        except Exception as exc:
            failures += 1
            if is_terminal(exc) or failures >= pace.max_failures:
                raise
            on_failure(number, exc)
            failure = exc
        else:
            failures = 0
            yield result
        upcoming = pace.next_start(started)
        if upcoming is None:
            if failure is not None:
                raise failure
            return
        wait = (upcoming - now()).total_seconds()
        if wait > 0:
            sleep(wait)
