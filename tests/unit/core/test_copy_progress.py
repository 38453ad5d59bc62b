"""What a resumed bootstrap copy still copies: the ring less the recorded ranges, exactly."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from cdcgen.core.copy_progress import CopiedRange, CopyProgress, uncovered
from cdcgen.core.token_ranges import TokenRange, ring_ranges
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN

S = datetime(2026, 11, 26, tzinfo=UTC)


def covered_by(ranges: list[TokenRange], token: int) -> bool:
    return any(r.low < token <= r.high for r in ranges)


def test_the_recorded_ranges_are_left_out_and_nothing_else() -> None:
    ring = ring_ranges([-100, 0, 100], at_least=8)
    done = (CopiedRange(ring[1], 10), CopiedRange(ring[5], 7))
    progress = CopyProgress(S, truncate=True, done=done)
    assert progress.remaining(ring) == [r for i, r in enumerate(ring) if i not in (1, 5)]
    assert progress.rows == 17
    assert not progress.truncates_now  # a range is recorded: truncating would erase it


def test_a_copy_killed_before_its_first_range_truncates_again() -> None:
    assert CopyProgress(S, truncate=True).truncates_now
    assert not CopyProgress(S, truncate=False).truncates_now


def test_ranges_recorded_against_another_ring_leave_exactly_the_gaps() -> None:
    """The ring moved between the attempts: the recorded ranges straddle today's."""
    today = ring_ranges([0], at_least=4)
    done = [TokenRange(MIN_TOKEN, -(2**62) + 5), TokenRange(-10, 10), TokenRange(20, MAX_TOKEN)]
    left = uncovered(today, done)
    assert left == [TokenRange(-(2**62) + 5, -10), TokenRange(10, 20)]


tokens = st.integers(MIN_TOKEN + 1, MAX_TOKEN - 1)


@given(st.lists(tokens, max_size=12), st.lists(st.tuples(tokens, tokens), max_size=8), tokens)
def test_every_token_is_either_recorded_or_left_to_copy_once(
    ring: list[int], pairs: list[tuple[int, int]], probe: int
) -> None:
    ranges = ring_ranges(ring, at_least=5)
    done = [TokenRange(min(a, b), max(a, b)) for a, b in pairs if a != b]
    left = uncovered(ranges, done)
    assert covered_by(left, probe) != covered_by(done, probe)
    assert sum(covered_by([r], probe) for r in left) <= 1  # disjoint
    assert all(any(w.low <= r.low and r.high <= w.high for w in ranges) for r in left)
    assert left == sorted(left)
