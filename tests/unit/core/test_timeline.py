"""The generation timeline: write acceptance rules of ScyllaDB's cdc/metadata.cc."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdcgen.core.errors import (
    ConflictingGeneration,
    GenerationNotLoaded,
    GenerationTimestampNotIncreasing,
    InvalidTimestamp,
    NoGenerationForWrite,
    UnknownGeneration,
    WriteFromTheFuture,
    WriteFromThePast,
    WriteRejected,
)
from cdcgen.core.timeline import GenerationId, GenerationTimeline, new_generation_timestamp
from cdcgen.core.topology import Node, TopologyDescription, make_generation

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
L = timedelta(seconds=5)


def at(seconds: float) -> datetime:
    return EPOCH + timedelta(seconds=seconds)


def description(seed: int) -> TopologyDescription:
    return make_generation([Node("a", 2, 0, (-(10**18), 10**18))], random.Random(seed))


T1, T2, T3 = at(100), at(200), at(300)


@pytest.fixture
def timeline() -> GenerationTimeline:
    result = GenerationTimeline()
    result.insert(T1, description(1))
    result.insert(T2, description(2))
    return result


# --- GenerationId and timestamps ------------------------------------------------------------


def test_generation_id_normalizes_to_utc_and_orders() -> None:
    plus_two = timezone(timedelta(hours=2))
    gen = GenerationId(datetime(2026, 1, 1, 2, 0, tzinfo=plus_two))
    assert gen.timestamp == datetime(2026, 1, 1, tzinfo=UTC)
    assert gen.timestamp.tzinfo == UTC
    later = GenerationId(at(1), UUID(int=1))
    assert GenerationId(at(0), UUID(int=5)) < later
    assert GenerationId(at(1)) < later
    assert str(later) == "2026-01-01T00:00:01.000+00:00/00000000-0000-0000-0000-000000000001"


def test_generation_id_rejects_naive_and_sub_millisecond() -> None:
    with pytest.raises(InvalidTimestamp, match="no time zone"):
        GenerationId(datetime(2026, 1, 1))
    with pytest.raises(InvalidTimestamp, match="sub-millisecond"):
        GenerationId(EPOCH + timedelta(microseconds=1500))
    with pytest.raises(InvalidTimestamp, match="not a UUID"):
        GenerationId(EPOCH, "x")  # type: ignore[arg-type]


def test_new_generation_timestamp() -> None:
    now = EPOCH + timedelta(microseconds=1_234_567)
    # 2 * ring_delay + leeway = 65 s, truncated to the millisecond.
    assert new_generation_timestamp(now) == at(66.234)
    assert new_generation_timestamp(now, first=True) == at(1.234)
    assert new_generation_timestamp(now, ring_delay=timedelta(0)) == at(1.234)
    assert new_generation_timestamp(now, ring_delay=timedelta(seconds=1), leeway=L) == at(8.234)
    assert new_generation_timestamp(now, last=at(66.233)) == at(66.234)
    with pytest.raises(GenerationTimestampNotIncreasing, match="does not come after"):
        new_generation_timestamp(now, last=at(66.234))
    with pytest.raises(InvalidTimestamp):
        new_generation_timestamp(datetime(2026, 1, 1))


# --- bookkeeping ----------------------------------------------------------------------------


def test_insert_prepare_and_queries(timeline: GenerationTimeline) -> None:
    assert timeline.timestamps() == (T1, T2)
    assert timeline.insert(T2, description(2)) is False  # same data again: no-op
    with pytest.raises(ConflictingGeneration):
        timeline.insert(T2, description(3))
    assert timeline.prepare(T3) is True
    assert timeline.prepare(T3) is True  # still needs loading
    assert not timeline.is_loaded(T3)
    assert timeline.prepare(T1) is False  # already loaded
    assert timeline.generation_at(at(99.999)) is None
    assert timeline.generation_at(T1) == T1
    assert timeline.generation_at(at(299.999)) == T2
    assert timeline.generation_at(at(10**6)) == T3
    assert timeline.operating_interval(T1) == (T1, T2)
    assert timeline.operating_interval(T3) == (T3, None)
    with pytest.raises(UnknownGeneration):
        timeline.operating_interval(at(150))
    with pytest.raises(GenerationNotLoaded):
        timeline.description(T3)
    assert timeline.insert(T3, description(3)) is True
    assert timeline.description(T3) == description(3)


# --- write acceptance -----------------------------------------------------------------------


def generation_of(timeline: GenerationTimeline, write: float, now: float) -> datetime:
    return timeline.generation_for_write(at(write), at(now), L)


def test_write_from_the_future(timeline: GenerationTimeline) -> None:
    assert generation_of(timeline, 255, 250) == T2  # exactly C + L is accepted
    with pytest.raises(WriteFromTheFuture, match="more than 0:00:05 after"):
        generation_of(timeline, 255.000001, 250)


def test_near_writes_go_to_the_generation_operating_at_write_time(
    timeline: GenerationTimeline,
) -> None:
    # Inside (C - L, C + L]: the generation operating at W, previous ones included.
    assert generation_of(timeline, 199, 202) == T1
    assert generation_of(timeline, 201, 198) == T2


def test_old_writes_only_into_the_current_generation(timeline: GenerationTimeline) -> None:
    # W <= C - L: accepted only inside the generation operating at C - L ...
    assert generation_of(timeline, 201, 210) == T2
    assert generation_of(timeline, 205, 210) == T2  # W == C - L
    with pytest.raises(WriteFromThePast):
        generation_of(timeline, 199, 210)
    # ... and only if no later generation has started by C.
    assert generation_of(timeline, 150, 199) == T1
    with pytest.raises(WriteFromThePast, match="not in its current generation"):
        generation_of(timeline, 150, 203)  # C - L = 198 is in T1, but T2 started at 200
    with pytest.raises(WriteFromThePast):
        generation_of(timeline, 150, 200)  # T2 starts exactly at C: already too late


def test_writes_before_the_first_generation(timeline: GenerationTimeline) -> None:
    with pytest.raises(NoGenerationForWrite, match="first known starts at"):
        generation_of(timeline, 98, 101)
    with pytest.raises(WriteFromThePast):
        generation_of(timeline, 50, 101)  # checked first, as in ScyllaDB
    empty = GenerationTimeline()
    with pytest.raises(NoGenerationForWrite, match="none known"):
        empty.generation_for_write(at(0), at(0))
    with pytest.raises(WriteFromThePast):
        empty.generation_for_write(at(0), at(10))


def test_prepared_generation_rejects_writes(timeline: GenerationTimeline) -> None:
    timeline.prepare(T3)
    with pytest.raises(GenerationNotLoaded, match="not loaded"):
        timeline.get_stream(T3, 0, at(301))
    assert generation_of(timeline, 299, 301) == T2
    timeline.insert(T3, description(3))
    assert timeline.get_stream(T3, 0, at(301)) == description(3).get_stream(0)


def test_get_stream_uses_the_generation_description(timeline: GenerationTimeline) -> None:
    for token in (-(2**63), -5, 0, 10**18, 2**63 - 1):
        assert timeline.get_stream(at(150), token, at(151)) == description(1).get_stream(token)
        assert timeline.get_stream(at(250), token, at(251)) == description(2).get_stream(token)


def test_naive_write_timestamps_are_rejected(timeline: GenerationTimeline) -> None:
    with pytest.raises(InvalidTimestamp):
        timeline.get_stream(datetime(2026, 1, 1), 0, at(0))


# --- against a literal transcription of cdc::metadata ---------------------------------------


class ScyllaMetadata:
    """``cdc::metadata::get_vnode_stream`` step by step, on integer microseconds, with its
    garbage collection (generations before the one operating at now - leeway are erased).
    """

    def __init__(self, gens: dict[int, bool]) -> None:
        self.gens = dict(sorted(gens.items()))  # timestamp -> loaded?

    def gen_used_at(self, ts: int) -> int | None:
        keys = [k for k in self.gens if k <= ts]
        return keys[-1] if keys else None

    def get_vnode_stream(self, ts: int, now: int, leeway: int) -> int:
        if ts > now + leeway:
            raise WriteFromTheFuture
        it = self.gen_used_at(now - leeway)
        if it is not None:
            self.gens = {k: v for k, v in self.gens.items() if k >= it}
        if ts <= now - leeway:
            keys = list(self.gens)
            is_previous_gen = it is not None and len(keys) > 1 and keys[1] <= now
            if it is None or ts < it or is_previous_gen:
                raise WriteFromThePast
        keys = list(self.gens)
        if not keys or ts < keys[0]:
            raise NoGenerationForWrite
        current = keys[0]
        for key in keys[1:]:
            if key <= ts:
                current = key
        if not self.gens[current]:
            raise GenerationNotLoaded
        return current


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(st.integers(min_value=0, max_value=60), st.booleans(), min_size=0, max_size=6),
    st.lists(
        st.tuples(
            st.integers(min_value=-10, max_value=80), st.integers(min_value=-10, max_value=80)
        ),
        min_size=1,
        max_size=20,
    ),
)
def test_agrees_with_scylla_metadata(gens: dict[int, bool], writes: list[tuple[int, int]]) -> None:
    """Generation timestamps in whole seconds, write and clock times in seconds too, so
    that the equalities at the leeway boundaries are exercised. Each write is checked on
    a fresh copy of ScyllaDB's state (its GC mutates it) and against our timeline."""
    timeline = GenerationTimeline()
    fake = description(0)
    for second, loaded in gens.items():
        if loaded:
            timeline.insert(at(second), fake)
        else:
            timeline.prepare(at(second))
    for write, now in writes:
        scylla = ScyllaMetadata({second * 10**6: loaded for second, loaded in gens.items()})
        try:
            micros = scylla.get_vnode_stream(write * 10**6, now * 10**6, 5 * 10**6)
            expected: object = at(micros / 10**6)
        except WriteRejected as exc:
            expected = type(exc)
        try:
            got: object = timeline.generation_for_write(at(write), at(now), L)
        except WriteRejected as exc:
            got = type(exc)
        assert got == expected, (write, now)
