"""Window planning: closed windows only, resume exactness, backfills, expiry, watermark."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.clocks import ClockCheck, NodeClock, window_closes_at
from cdcgen.core.errors import DataExpired, LakeInconsistent
from cdcgen.core.lake_buckets import LakeBuckets
from cdcgen.core.stream_id import StreamId
from cdcgen.core.tablets import TabletStreamSet
from cdcgen.core.time import floor_ms, parse_time_label, time_label
from cdcgen.core.topology import Node, make_generation
from cdcgen.core.watermark import consistency_watermark
from cdcgen.core.windows import (
    GenerationSpan,
    Interval,
    LakeWindow,
    Mode,
    TableState,
    WindowKind,
    WindowPolicy,
    check_not_expired,
    generation_spans,
    parse_window_label,
    plan_windows,
    tablet_spans,
    window_label,
)

T0 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
TABLE = TableRef("shop", "orders")
POLICY = WindowPolicy(
    leeway=timedelta(seconds=5),
    confidence_window=timedelta(seconds=30),
    ttl=timedelta(hours=24),
    buckets=LakeBuckets(4),
)


def description(seed: int = 1, shards: int = 4, vnodes: int = 4):
    rng = random.Random(seed)
    tokens = tuple(sorted({rng.randint(-(2**63), 2**63 - 1) for _ in range(vnodes)}))
    return make_generation([Node("n1", shards, 12, tokens)], random.Random(seed))


def spans(*starts: datetime):
    return generation_spans((start, description(i + 1), f"g{i}") for i, start in enumerate(starts))


def clocks(at: datetime, nodes: int = 3) -> list[NodeClock]:
    return [NodeClock(f"n{i}", at) for i in range(nodes)]


LATE = T0 + timedelta(days=1)  # every node far past every window
NOW = T0 + timedelta(hours=2)


# --- labels and time ---------------------------------------------------------------------


@given(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)))
def test_time_labels_round_trip_at_millisecond_precision(moment: datetime) -> None:
    utc = moment.replace(tzinfo=UTC)
    assert parse_time_label(time_label(utc)) == floor_ms(utc)
    assert floor_ms(utc) <= utc < floor_ms(utc) + timedelta(milliseconds=1)


def test_window_label_sorts_and_parses() -> None:
    label = window_label(T0, T0 + timedelta(hours=1))
    assert label == "20261122T100000.000Z_20261122T110000.000Z"
    assert parse_window_label(label) == (T0, T0 + timedelta(hours=1))
    with pytest.raises(ValueError, match="window label"):
        parse_window_label("20261122T100000.000Z")


def test_interval_floors_to_milliseconds_and_rejects_empty() -> None:
    interval = Interval(T0 + timedelta(microseconds=999), T0 + timedelta(seconds=1, microseconds=1))
    assert interval.start == T0 and interval.end == T0 + timedelta(seconds=1)
    with pytest.raises(ValueError, match="not after"):
        Interval(T0, T0)


def test_table_ref_allow_lists_names() -> None:
    assert TableRef.parse("shop.orders").qualified_log == "shop.orders_scylla_cdc_log"
    with pytest.raises(ValueError):
        TableRef("shop", "orders; DROP TABLE x")


# --- closing ------------------------------------------------------------------------------


def test_a_window_closes_only_when_every_clock_is_past_end_plus_leeway_plus_confidence() -> None:
    end = T0 + timedelta(hours=1)
    closes = POLICY.closes_at(end)
    assert closes == end + timedelta(seconds=35)
    assert closes == window_closes_at(end, POLICY.leeway, POLICY.confidence_window)
    assert ClockCheck(closes, tuple(clocks(closes))).why_not() is None
    late_node = [*clocks(closes), NodeClock("slow", closes - timedelta(milliseconds=1))]
    assert "node slow clock" in (ClockCheck(closes, tuple(late_node)).why_not() or "")
    unreadable = [*clocks(closes), NodeClock("down", None, "connection refused")]
    why = ClockCheck(closes, tuple(unreadable)).why_not() or ""
    assert "node down unreachable (connection refused)" in why
    assert ClockCheck(closes, ()).why_not() == "no node clock was read"


def test_open_generation_window_is_pending_not_extracted() -> None:
    gens = spans(T0)
    interval = Interval(T0, T0 + timedelta(hours=1))
    at = interval.end + timedelta(seconds=34)
    plan = plan_windows(TABLE, gens, interval, TableState(), clocks(at), POLICY, NOW)
    assert plan.windows == ()
    (pending,) = plan.pending
    assert pending.closes_at == interval.end + timedelta(seconds=35)
    assert "before" in pending.reason


# --- first runs and generations -------------------------------------------------------------


def test_first_run_reads_every_stream_once_per_generation_clipped_to_interval() -> None:
    gens = spans(T0 - timedelta(hours=3), T0 + timedelta(minutes=20))
    interval = Interval(T0, T0 + timedelta(hours=1))
    plan = plan_windows(TABLE, gens, interval, TableState(), clocks(LATE), POLICY, NOW)
    assert plan.first_run and plan.floor == T0
    by_generation: dict[str, list] = {}
    for window in plan.windows:
        by_generation.setdefault(window.generation.label, []).append(window)
    old, new = gens
    assert {(w.start, w.end) for w in by_generation[old.label]} == {(T0, new.start)}
    assert {(w.start, w.end) for w in by_generation[new.label]} == {(new.start, interval.end)}
    for gen in gens:
        streams = [s for w in by_generation[gen.label] for s in w.streams]
        assert sorted(streams) == sorted(gen.streams)
        for window in by_generation[gen.label]:
            assert all(POLICY.buckets.of(s) == window.bucket for s in window.streams)


def test_generation_starting_after_interval_is_not_touched() -> None:
    gens = spans(T0, T0 + timedelta(hours=2))
    plan = plan_windows(
        TABLE, gens, Interval(T0, T0 + timedelta(hours=1)), TableState(), clocks(LATE), POLICY, NOW
    )
    assert {w.generation.label for w in plan.windows} == {gens[0].label}


def every_bucket(gen: GenerationSpan, at: datetime) -> dict[tuple[datetime, int], datetime]:
    """Checkpoints of every bucket of ``gen`` at ``at``."""
    return {(gen.start, bucket): at for bucket in gen.buckets(POLICY.buckets)}


def test_completed_checkpoints_make_a_rerun_a_no_op() -> None:
    gens = spans(T0)
    interval = Interval(T0, T0 + timedelta(hours=1))
    state = TableState(
        started_at=T0,
        checkpoints=every_bucket(gens[0], interval.end),
    )
    plan = plan_windows(TABLE, gens, interval, state, clocks(LATE), POLICY, NOW)
    assert plan.windows == () and plan.pending == () and plan.garbage == ()


def test_next_interval_starts_at_the_checkpoint_and_catches_up_missed_ones() -> None:
    gens = spans(T0)
    first_end = T0 + timedelta(hours=1)
    state = TableState(started_at=T0, checkpoints=every_bucket(gens[0], first_end))
    # The run for [1h, 2h) failed; the run for [2h, 3h) catches up from the checkpoint.
    interval = Interval(T0 + timedelta(hours=2), T0 + timedelta(hours=3))
    plan = plan_windows(TABLE, gens, interval, state, clocks(LATE), POLICY, NOW)
    assert {(w.start, w.end) for w in plan.windows} == {(first_end, interval.end)}


# --- resume ---------------------------------------------------------------------------------


def test_unacknowledged_bucket_is_redone_whole_and_its_stale_files_dropped() -> None:
    (gen,) = spans(T0)
    interval = Interval(T0, T0 + timedelta(hours=1))
    buckets = gen.buckets(POLICY.buckets)
    done_bucket, partial_bucket = [k for k, v in buckets.items() if len(v) > 1][:2]
    checkpoints = {(gen.start, done_bucket): interval.end}  # the other: written, then killed
    lake = [
        LakeWindow(gen.label, T0, interval.end, done_bucket),
        LakeWindow(gen.label, T0, interval.end, partial_bucket),  # committed, not acknowledged
    ]
    state = TableState(started_at=T0, checkpoints=checkpoints)
    plan = plan_windows(TABLE, [gen], interval, state, clocks(LATE), POLICY, NOW, lake)
    assert plan.garbage == (LakeWindow(gen.label, T0, interval.end, partial_bucket),)
    planned = {w.bucket: w for w in plan.windows}
    assert done_bucket not in planned
    assert planned[partial_bucket].kind is WindowKind.RESUME
    assert planned[partial_bucket].start == T0
    assert set(planned[partial_bucket].streams) == set(buckets[partial_bucket])
    assert set(planned) == set(buckets) - {done_bucket}


def test_lake_window_straddling_a_checkpoint_is_refused() -> None:
    (gen,) = spans(T0)
    interval = Interval(T0, T0 + timedelta(hours=2))
    middle = T0 + timedelta(hours=1)
    state = TableState(started_at=T0, checkpoints=every_bucket(gen, middle))
    bucket = POLICY.buckets.of(gen.streams[0])
    lake = [LakeWindow(gen.label, T0, interval.end, bucket)]
    with pytest.raises(LakeInconsistent, match="straddles"):
        plan_windows(TABLE, [gen], interval, state, clocks(LATE), POLICY, NOW, lake)


# --- expiry -----------------------------------------------------------------------------------


def test_window_older_than_ttl_fails_loudly_with_rebootstrap_instructions() -> None:
    gens = spans(T0)
    interval = Interval(T0, T0 + timedelta(hours=1))
    now = T0 + timedelta(hours=30)
    with pytest.raises(DataExpired) as info:
        plan_windows(TABLE, gens, interval, TableState(), clocks(LATE), POLICY, now)
    message = str(info.value)
    assert "shop.orders" in message and "expired" in message
    assert "Re-bootstrap" in message and "advance_watermark" in message
    assert "up to 6:00:00" in message


def test_expiry_respects_margin_and_no_ttl() -> None:
    policy = WindowPolicy(ttl=timedelta(hours=1), expiry_margin=timedelta(minutes=1))
    now = T0 + timedelta(hours=1)
    with pytest.raises(DataExpired):
        check_not_expired(TABLE, T0 + timedelta(seconds=59), now, policy)
    check_not_expired(TABLE, T0 + timedelta(minutes=1), now, policy)
    check_not_expired(TABLE, T0 - timedelta(days=9), now, WindowPolicy(ttl=timedelta(0)))
    with pytest.raises(DataExpired, match="backfill can only re-extract"):
        check_not_expired(TABLE, T0, now + timedelta(hours=1), policy, Mode.BACKFILL)


# --- backfill -----------------------------------------------------------------------------------


def test_backfill_replaces_acknowledged_windows_exactly_and_fills_gaps() -> None:
    (gen,) = spans(T0 - timedelta(hours=5))
    end = T0 + timedelta(hours=3)
    state = TableState(started_at=T0, checkpoints=every_bucket(gen, end))
    bucket = POLICY.buckets.of(gen.streams[0])
    hour = timedelta(hours=1)
    lake = [
        LakeWindow(gen.label, T0, T0 + hour, bucket),
        LakeWindow(gen.label, T0 + hour, T0 + 3 * hour, bucket),
    ]
    interval = Interval(T0 - hour, T0 + 2 * hour)
    plan = plan_windows(
        TABLE, [gen], interval, state, clocks(LATE), POLICY, T0 + 4 * hour, lake, Mode.BACKFILL
    )
    mine = sorted((w.start, w.end, w.kind) for w in plan.windows if w.bucket == bucket)
    assert mine == [
        (T0 - hour, T0, WindowKind.NEW),  # before the table's start: history extended
        (T0, T0 + hour, WindowKind.REPLACE),
        (T0 + hour, T0 + 3 * hour, WindowKind.REPLACE),  # exactly as it was, not clipped
    ]
    assert plan.garbage == ()


def test_backfill_never_goes_past_the_checkpoint() -> None:
    (gen,) = spans(T0)
    cp = T0 + timedelta(minutes=30)
    state = TableState(started_at=T0, checkpoints=every_bucket(gen, cp))
    plan = plan_windows(
        TABLE, [gen], Interval(T0, T0 + timedelta(hours=1)), state, clocks(LATE), POLICY, NOW,
        mode=Mode.BACKFILL,
    )  # fmt: skip
    assert {(w.start, w.end) for w in plan.windows} == {(T0, cp)}


# --- tablets ------------------------------------------------------------------------------------


def test_tablet_stream_sets_bound_each_stream_by_its_set() -> None:
    rng = random.Random(3)
    first = TabletStreamSet(
        T0, tuple(sorted((StreamId.from_parts(t, 0, rng.getrandbits(38)) for t in (-5, 100)),
                         key=lambda s: s.token)),
    )  # fmt: skip
    split = TabletStreamSet(
        T0 + timedelta(minutes=10),
        tuple(StreamId.from_parts(t, 0, rng.getrandbits(38)) for t in (-5, 40, 100)),
    )
    gens = tablet_spans([first, split])
    assert gens[0].end == split.timestamp and gens[1].end is None and gens[0].is_tablets
    plan = plan_windows(
        TABLE, gens, Interval(T0, T0 + timedelta(hours=1)), TableState(), clocks(LATE), POLICY, NOW
    )
    reads = {(s, w.start, w.end) for w in plan.windows for s in w.streams}
    assert (first.streams[0], T0, split.timestamp) in reads
    assert (split.streams[1], split.timestamp, T0 + timedelta(hours=1)) in reads
    assert len(reads) == 5


# --- watermark ----------------------------------------------------------------------------------


def test_watermark_is_the_slowest_bucket_of_unfinished_generations() -> None:
    old, new = spans(T0, T0 + timedelta(hours=1))
    half = T0 + timedelta(minutes=30)
    buckets = POLICY.buckets
    checkpoints = every_bucket(old, old.end) | every_bucket(new, T0 + timedelta(hours=2))
    slow = buckets.of(new.streams[3])
    checkpoints[(new.start, slow)] = T0 + timedelta(hours=1, minutes=10)
    state = TableState(started_at=T0, checkpoints=checkpoints)
    assert consistency_watermark([old, new], state, buckets) == T0 + timedelta(hours=1, minutes=10)
    lagging = dict(checkpoints)
    lagging[(old.start, buckets.of(old.streams[0]))] = half
    assert consistency_watermark([old, new], TableState(T0, None, lagging), buckets) == half
    assert consistency_watermark([old, new], TableState(), buckets) is None
    # A bucket without a checkpoint holds the watermark at the table's floor.
    missing = dict(checkpoints)
    del missing[(new.start, buckets.of(new.streams[0]))]
    assert consistency_watermark([old, new], TableState(T0, None, missing), buckets) == new.start
    # Empty buckets (no stream of the generation hashes to one) hold nothing back.
    many = LakeBuckets(64)  # more buckets than the 16 streams: most are empty
    assert len(new.buckets(many)) < many.count
    sparse = {(new.start, b): T0 + timedelta(hours=2) for b in new.buckets(many)}
    assert consistency_watermark([new], TableState(new.start, None, sparse), many) == T0 + (
        timedelta(hours=2)
    )


def test_pruned_generation_is_complete_through_the_watermark() -> None:
    old, new = spans(T0, T0 + timedelta(hours=1))
    state = TableState(
        started_at=T0,
        watermark=new.start,
        checkpoints=every_bucket(new, T0 + timedelta(hours=2)),
    )
    assert consistency_watermark([old, new], state, POLICY.buckets) == T0 + timedelta(hours=2)
    plan = plan_windows(
        TABLE, [old, new], Interval(T0 + timedelta(hours=2), T0 + timedelta(hours=3)), state,
        clocks(LATE), POLICY, T0 + timedelta(hours=4),
    )  # fmt: skip
    assert {w.generation.label for w in plan.windows} == {new.label}


def test_generation_span_rejects_end_before_start() -> None:
    with pytest.raises(ValueError, match="not after its start"):
        GenerationSpan(T0, T0, description())


# --- the exactly-once property ---------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    cuts=st.lists(st.integers(1, 180), min_size=1, max_size=6),
    kill_probability=st.floats(0, 0.6),
)
def test_runs_killed_anywhere_leave_each_bucket_covered_exactly_once(
    seed: int, cuts: list[int], kill_probability: float
) -> None:
    """Simulate runs over random intervals that die at random points, then a clean run.

    Files of a window are committed (or not) independently, and so is each checkpoint
    after its window's commit, which is at least as hostile as a real kill. Afterwards
    each (generation, bucket) must be covered by disjoint lake windows whose union is
    exactly [floor, end): nothing lost, nothing twice.
    """
    rng = random.Random(seed)
    gens = spans(T0, T0 + timedelta(minutes=50), T0 + timedelta(minutes=130))
    policy = WindowPolicy(
        ttl=None, buckets=LakeBuckets(3), leeway=timedelta(0), confidence_window=timedelta(0)
    )
    bounds = sorted({T0 + timedelta(minutes=m) for m in cuts})
    intervals = [Interval(T0, bounds[0])] + [Interval(a, b) for a, b in itertools.pairwise(bounds)]
    lake: set[LakeWindow] = set()
    checkpoints: dict[tuple[datetime, int], datetime] = {}
    started: datetime | None = None

    def run(interval: Interval, kill: float) -> None:
        nonlocal started
        state = TableState(started_at=started, checkpoints=dict(checkpoints))
        plan = plan_windows(
            TABLE, gens, interval, state, clocks(LATE), policy, interval.end, sorted(lake)
        )
        if plan.first_run:
            started = plan.floor
        lake.difference_update(plan.garbage)
        for window in plan.windows:
            if rng.random() < kill:
                return
            lake.discard(window.lake_window)  # dynamic overwrite of its own partitions
            lake.add(window.lake_window)
            if rng.random() < kill:
                return
            key = (window.generation.start, window.bucket)
            checkpoints[key] = max(checkpoints.get(key, window.end), window.end)

    for interval in intervals:
        run(interval, kill_probability)
        if rng.random() < 0.5:
            run(interval, kill_probability)  # Airflow retries the same interval
    last = intervals[-1]
    run(last, 0.0)
    for gen in gens:
        if gen.start >= last.end:
            continue
        end = last.end if gen.end is None else min(gen.end, last.end)
        for bucket in {policy.buckets.of(s) for s in gen.streams}:
            covered = sorted(
                (w.start, w.end) for w in lake if w.generation == gen.label and w.bucket == bucket
            )
            cursor = max(gen.start, T0)
            for start, stop in covered:
                assert start == cursor, (gen.label, bucket, covered)
                cursor = stop
            assert cursor == end, (gen.label, bucket, covered)
