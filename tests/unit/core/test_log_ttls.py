"""What the runs know of the CDC TTLs of the log rows not extracted yet (core.log_ttls)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from cdcgen.core.log_ttls import LogTtls, recorded_after_run, shortest, unextracted_ttl

T0 = datetime(2026, 11, 27, tzinfo=UTC)
HOUR, DAY = timedelta(hours=1), timedelta(days=1)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_the_bound_counts_the_ttl_before_the_raise_only_until_the_watermark_passes_it() -> None:
    raised = LogTtls(before=3600, seen=86_400, since=at(30))
    assert unextracted_ttl(DAY, raised, at(20)) == HOUR  # rows in (20, 30) may keep it
    assert unextracted_ttl(DAY, raised, at(30)) == DAY
    assert unextracted_ttl(timedelta(minutes=5), raised, at(40)) == timedelta(minutes=5)
    assert unextracted_ttl(None, LogTtls(0, 0, at(0)), at(1)) is None  # nothing expires
    assert unextracted_ttl(None, LogTtls(3600, 0, at(30)), at(1)) == HOUR  # removed after
    assert unextracted_ttl(DAY, None, None) == DAY  # nothing recorded yet
    assert unextracted_ttl(timedelta(0), None, None) is None


def test_a_run_records_what_it_saw_and_since_when() -> None:
    first = recorded_after_run(HOUR, None, at(2), at(0))
    assert first == LogTtls(3600, 3600, at(2))
    # The same TTL again: ``since`` stays; the bound before it goes once passed.
    assert recorded_after_run(HOUR, first, at(9), at(5)) == first
    # Raised: what was seen before bounds the rows up to this run's start.
    raised = recorded_after_run(DAY, first, at(30), at(20))
    assert raised == LogTtls(3600, 86_400, at(30))
    assert recorded_after_run(DAY, raised, at(45), at(25)) == raised  # not passed yet
    assert recorded_after_run(DAY, raised, at(60), at(40)) == LogTtls(86_400, 86_400, at(30))
    # Raised again before the watermark passed the first raise: both bounds kept.
    again = recorded_after_run(2 * DAY, raised, at(50), at(28))
    assert again == LogTtls(3600, 172_800, at(50))
    assert shortest(0, 0) == 0 and shortest(0, 60, 30) == 30


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[str, int]]:
    """Minutes apart: ``("alter", ttl)`` or ``("run", watermark lag)``, at most one ALTER
    between two runs (what no run can see otherwise: the documented limit)."""
    events: list[tuple[str, int]] = [("run", 0)]
    for _ in range(draw(st.integers(1, 12))):
        if events[-1][0] == "run" and draw(st.booleans()):
            events.append(("alter", draw(st.sampled_from([0, 60, 3600, 86_400]))))
        events.append(("run", draw(st.integers(0, 15))))
    return events


@given(histories(), st.sampled_from([60, 3600, 86_400]))
def test_the_bound_is_never_longer_than_any_unextracted_row_s_ttl(
    events: list[tuple[str, int]], initial: int
) -> None:
    """Every minute a row is logged with the TTL in effect; runs move the watermark to
    some minutes before their start. Whatever the history, the bound a run goes by is
    no longer than the TTL of any row after the watermark (0, none, counts as longest)."""
    ttl_at: list[int] = []  # the TTL of the row logged at each minute
    ttl, minute = initial, 0
    recorded: LogTtls | None = None
    watermark: datetime | None = None
    for kind, value in events:
        minute += 1
        ttl_at.append(ttl)
        if kind == "alter":
            ttl = value
            continue
        current = timedelta(seconds=ttl) if ttl else None
        bound = unextracted_ttl(current, recorded, watermark)
        # Rows after the watermark (the row of minute m is ttl_at[m - 1]), and from now on.
        first = 0 if watermark is None else int((watermark - T0).total_seconds() // 60)
        after = [*ttl_at[first:], ttl]
        truth = shortest(*after)
        assert (bound is None and truth == 0) or (
            bound is not None and 0 < bound.total_seconds() <= (truth or float("inf"))
        ), (events, minute, recorded, watermark)
        new_watermark = max(watermark or T0, at(max(0, minute - value)))
        recorded = recorded_after_run(current, recorded, at(minute), new_watermark)
        watermark = new_watermark
