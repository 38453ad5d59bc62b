"""Tablet stream sets rebuilt from cdc_streams_state + cdc_streams_history rows."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdcgen.core.errors import InvalidStreamHistory
from cdcgen.core.stream_id import StreamId
from cdcgen.core.tablets import (
    StreamHistoryRow,
    StreamSetDiff,
    StreamState,
    TabletStreamSet,
    apply_stream_diff,
    stream_set_at,
    stream_set_diff,
    stream_set_views,
    stream_sets,
    tablet_stream_id,
)
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN

EPOCH = datetime(2026, 3, 1, tzinfo=UTC)
RNG = random.Random(5)


def at(seconds: int) -> datetime:
    return EPOCH + timedelta(seconds=seconds)


def sid(token: int) -> StreamId:
    return tablet_stream_id(token, RNG)


def rows(when: datetime, state: StreamState, streams: list[StreamId]) -> list[StreamHistoryRow]:
    return [StreamHistoryRow(when, state, s.token, s) for s in streams]


# Two tablets, then a split into four, then the last tablet's stream replaced.
Q = 2**62
A, B = sid(-1), sid(MAX_TOKEN)
A1, A2, B1, B2 = sid(-Q - 1), sid(-1), sid(Q - 1), sid(MAX_TOKEN)
B2_NEW = sid(MAX_TOKEN)
BASE = TabletStreamSet.from_state_rows(at(0), {MAX_TOKEN: B, -1: A})
HISTORY = (
    rows(at(20), StreamState.OPENED, [B2_NEW])
    + rows(at(10), StreamState.CLOSED, [A, B])
    + rows(at(10), StreamState.OPENED, [A1, A2, B1, B2])
    + rows(at(20), StreamState.CLOSED, [B2])
)


def test_tablet_stream_ids_have_index_zero_and_the_last_token() -> None:
    assert (A.token, A.index, A.version) == (-1, 0, 1)
    assert B.token == MAX_TOKEN


def test_stream_state_values() -> None:
    assert [int(s) for s in StreamState] == [0, 1, 2]
    assert StreamState.from_value(2) is StreamState.OPENED
    with pytest.raises(InvalidStreamHistory, match="invalid value 3 for stream state"):
        StreamState.from_value(3)


def test_base_set_is_sorted_by_token() -> None:
    assert BASE.streams == (A, B)
    assert BASE.timestamp == at(0)


def test_state_row_token_must_match_stream() -> None:
    with pytest.raises(InvalidStreamHistory, match="last_token 5 holds stream"):
        TabletStreamSet.from_state_rows(at(0), {5: A})


def test_history_rows_validate() -> None:
    with pytest.raises(InvalidStreamHistory, match="state CURRENT"):
        StreamHistoryRow(at(1), StreamState.CURRENT, A.token, A)
    with pytest.raises(InvalidStreamHistory, match="invalid value 7"):
        StreamHistoryRow(at(1), 7, A.token, A)  # type: ignore[arg-type]
    with pytest.raises(InvalidStreamHistory, match="whose token is -1"):
        StreamHistoryRow(at(1), StreamState.OPENED, 0, A)


def test_stream_sets_apply_diffs_in_timestamp_order() -> None:
    sets = stream_sets(BASE, HISTORY)
    assert [s.timestamp for s in sets] == [at(0), at(10), at(20)]
    assert sets[1].streams == (A1, A2, B1, B2)
    assert sets[2].streams == (A1, A2, B1, B2_NEW)


def test_views_like_system_cdc_streams() -> None:
    first, split, replaced = stream_set_views(BASE, HISTORY)
    assert (first.current, first.closed, first.opened) == ((A, B), (), (A, B))
    assert (split.current, split.closed, split.opened) == (
        (A1, A2, B1, B2),
        (A, B),
        (A1, A2, B1, B2),
    )
    # Same token, new ID: closed + opened.
    assert (replaced.closed, replaced.opened) == ((B2,), (B2_NEW,))
    table_rows = replaced.rows()
    assert [state for _, state, _ in table_rows] == [0, 0, 0, 0, 1, 2]
    current_ids = [stream for _, state, stream in table_rows if state is StreamState.CURRENT]
    assert [s.raw for s in current_ids] == sorted(s.raw for s in replaced.current)
    assert {when for when, _, _ in table_rows} == {at(20)}


def test_stream_set_at() -> None:
    assert stream_set_at(BASE, HISTORY, at(0)).timestamp == at(0)
    assert stream_set_at(BASE, HISTORY, at(19)).timestamp == at(10)
    assert stream_set_at(BASE, HISTORY, at(10**6)).timestamp == at(20)
    with pytest.raises(LookupError, match="precedes the oldest stream set"):
        stream_set_at(BASE, HISTORY, at(-1))


def test_history_up_to_the_base_is_ignored() -> None:
    """Rows at or before the base timestamp are leftovers of a garbage collection."""
    new_base = TabletStreamSet(at(10), (A1, A2, B1, B2))
    sets = stream_sets(new_base, HISTORY)
    assert [s.timestamp for s in sets] == [at(10), at(20)]
    assert sets[-1].streams == (A1, A2, B1, B2_NEW)


def test_inconsistent_history_is_an_error() -> None:
    with pytest.raises(InvalidStreamHistory, match=f"closes stream {B2.hex}, which is not open"):
        stream_sets(BASE, rows(at(20), StreamState.CLOSED, [B2]))
    with pytest.raises(InvalidStreamHistory, match="still held by open stream"):
        stream_sets(BASE, rows(at(20), StreamState.OPENED, [B2]))


def test_unsorted_set_is_an_error() -> None:
    with pytest.raises(InvalidStreamHistory, match="not sorted by unique tokens"):
        TabletStreamSet(at(0), (B, A))


def test_get_stream_picks_the_tablet_holding_the_token() -> None:
    split = stream_sets(BASE, HISTORY)[1]
    assert split.get_stream(MIN_TOKEN) == A1
    assert split.get_stream(-Q - 1) == A1
    assert split.get_stream(-Q) == A2
    assert split.get_stream(0) == B1
    assert split.get_stream(MAX_TOKEN) == B2


stream_tokens = st.lists(
    st.integers(min_value=MIN_TOKEN, max_value=MAX_TOKEN), unique=True, max_size=12
)


@settings(max_examples=200)
@given(stream_tokens, stream_tokens, st.sets(st.integers(min_value=0, max_value=11)))
def test_diff_then_apply_round_trips(
    before_tokens: list[int], after_tokens: list[int], keep: set[int]
) -> None:
    """Sets sharing some streams (same ID), some tokens (new ID) and some not at all."""
    rng = random.Random(len(before_tokens) * 31 + len(after_tokens))
    before = sorted((tablet_stream_id(t, rng) for t in before_tokens), key=lambda s: s.token)
    by_token = {s.token: s for s in before}
    after_list = [
        by_token[t] if t in by_token and i in keep else tablet_stream_id(t, rng)
        for i, t in enumerate(after_tokens)
    ]
    after = sorted(after_list, key=lambda s: s.token)
    diff = stream_set_diff(before, after)
    # Reference: set arithmetic on IDs.
    assert set(diff.closed) == set(before) - set(after)
    assert set(diff.opened) == set(after) - set(before)
    rebuilt = apply_stream_diff(TabletStreamSet(at(0), tuple(before)), at(1), diff)
    assert rebuilt.streams == tuple(after)


def test_diff_of_identical_sets_is_empty() -> None:
    assert stream_set_diff([A, B], [A, B]) == StreamSetDiff((), ())
