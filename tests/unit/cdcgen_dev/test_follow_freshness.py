"""The freshness of a follow's rows from its cycles, on hand-made cycles."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cdcgen_dev.follow_freshness import Covered, NotCovered, freshness_seconds, percentile, summary

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


#: Three cycles 10 s apart, each covering up to 35 s before it started, durable 4 s later.
CYCLES = [Covered(at(s - 35), at(s + 4)) for s in (40, 50, 60)]


def test_a_row_is_fresh_when_the_first_cycle_covering_it_finished() -> None:
    # 4.9 s: covered by the first cycle (until 5 s); 5 s: not by it (strictly after),
    # by the second (until 15 s); 20 s: by the third (until 25 s).
    assert freshness_seconds([at(4.9), at(5), at(20)], CYCLES) == pytest.approx(
        [44 - 4.9, 54 - 5, 64 - 20]
    )


def test_a_cycle_covering_less_than_an_earlier_one_never_counts() -> None:
    # An apply cycle that found nothing new reports the same or, with a clock read
    # differently, less; the earlier cycle had already made the row durable.
    cycles = [Covered(at(10), at(12)), Covered(at(8), at(20)), Covered(at(30), at(40))]
    assert freshness_seconds([at(9), at(11)], cycles) == pytest.approx([3, 29])


def test_a_row_no_cycle_covered_is_an_error_not_a_figure() -> None:
    with pytest.raises(NotCovered, match="never covered"):
        freshness_seconds([at(1), at(25)], CYCLES)
    with pytest.raises(NotCovered, match="no cycle"):
        freshness_seconds([at(1)], [])


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 0.50) == 50
    assert percentile(values, 0.95) == 95
    assert percentile([7.0], 0.95) == 7
    assert summary([3.0, 1.0, 2.0, 10.0]) == {"p50": 2.0, "p95": 10.0, "max": 10.0}
    with pytest.raises(ValueError):
        percentile([], 0.5)
