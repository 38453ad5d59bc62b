"""The follow loop's pace and error rules, and the latest end every clock has closed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cdcgen.core.clocks import NodeClock, closed_until
from cdcgen.core.errors import TerminalError, TransientError
from cdcgen.core.follow_loop import FollowPace, follow

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
LEEWAY = timedelta(seconds=5)
CONFIDENCE = timedelta(seconds=30)


class FakeTime:
    """A clock that moves only when slept on, or when a cycle takes time."""

    def __init__(self) -> None:
        self.current = T0
        self.slept: list[float] = []

    def now(self) -> datetime:
        return self.current

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.current += timedelta(seconds=seconds)


def run(steps: dict[int, object], pace: FollowPace, time: FakeTime, cost: float = 2.0) -> list:
    """Follow with cycle ``n`` returning or raising ``steps[n]`` (default: ``n``), each
    taking ``cost`` seconds."""
    told: list[int] = []

    def step(number: int) -> object:
        time.current += timedelta(seconds=cost)
        outcome = steps.get(number, number)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    results = list(
        follow(
            step, pace, is_terminal=lambda exc: isinstance(exc, TerminalError),
            now=time.now, sleep=time.sleep, on_failure=lambda n, exc: told.append(n),
        )
    )  # fmt: skip
    return [results, told]


def test_cycles_start_every_period_until_the_deadline() -> None:
    time = FakeTime()
    pace = FollowPace(T0 + timedelta(seconds=35), timedelta(seconds=10))
    results, _ = run({}, pace, time)
    assert results == [1, 2, 3, 4]  # started at 0, 10, 20, 30 s; 40 s is past the deadline
    assert time.slept == [8.0, 8.0, 8.0]  # each cycle took 2 s of its 10


def test_a_cycle_longer_than_the_period_is_followed_at_once() -> None:
    time = FakeTime()
    pace = FollowPace(T0 + timedelta(seconds=25), timedelta(seconds=10))
    results, _ = run({}, pace, time, cost=15.0)
    assert results == [1, 2]
    assert time.slept == []


def test_the_first_cycle_runs_even_past_the_deadline() -> None:
    time = FakeTime()
    results, _ = run({}, FollowPace(T0 - timedelta(hours=1), timedelta(seconds=10)), time)
    assert results == [1]


def test_a_transient_failure_is_left_to_the_next_cycle() -> None:
    time = FakeTime()
    pace = FollowPace(T0 + timedelta(seconds=35), timedelta(seconds=10))
    results, told = run({2: TransientError("node down")}, pace, time)
    assert results == [1, 3, 4]
    assert told == [2]


def test_a_terminal_failure_ends_the_follow_at_once() -> None:
    time = FakeTime()
    pace = FollowPace(T0 + timedelta(minutes=5), timedelta(seconds=10))
    with pytest.raises(TerminalError, match="refused"):
        run({2: TerminalError("refused")}, pace, time)
    assert time.current < T0 + timedelta(seconds=20)


def test_transient_failures_in_a_row_end_the_follow() -> None:
    time = FakeTime()
    pace = FollowPace(T0 + timedelta(minutes=5), timedelta(seconds=10), max_failures=3)
    down = TransientError("node down")
    with pytest.raises(TransientError):
        run({2: down, 3: down, 4: down}, pace, time)


def test_a_success_starts_the_count_of_failures_again() -> None:
    down = TransientError("node down")
    pace = FollowPace(T0 + timedelta(seconds=65), timedelta(seconds=10), max_failures=3)
    results, told = run({2: down, 3: down, 5: down, 6: down}, pace, FakeTime())
    assert results == [1, 4, 7]
    assert told == [2, 3, 5, 6]


def test_a_follow_never_ends_on_a_failed_cycle_looking_healthy() -> None:
    time = FakeTime()
    pace = FollowPace(T0 + timedelta(seconds=15), timedelta(seconds=10))
    with pytest.raises(TransientError, match="last"):
        run({2: TransientError("last")}, pace, time)


def test_a_pace_that_cannot_advance_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        FollowPace(T0, timedelta(0))
    with pytest.raises(ValueError, match="max_failures"):
        FollowPace(T0, timedelta(seconds=1), max_failures=0)


def test_closed_until_is_the_slowest_clock_less_leeway_and_confidence() -> None:
    clocks = [
        NodeClock("n1", T0 + timedelta(seconds=3, microseconds=1500)),
        NodeClock("n2", T0 + timedelta(seconds=1, microseconds=999)),
    ]
    end = closed_until(clocks, LEEWAY, CONFIDENCE)
    assert end == T0 + timedelta(seconds=1) - LEEWAY - CONFIDENCE  # to the millisecond


def test_nothing_is_closed_while_a_clock_cannot_be_read() -> None:
    clocks = [NodeClock("n1", T0), NodeClock("n2", None, error="timed out")]
    assert closed_until(clocks, LEEWAY, CONFIDENCE) is None
    assert closed_until([], LEEWAY, CONFIDENCE) is None
