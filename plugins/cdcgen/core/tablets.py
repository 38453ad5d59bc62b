"""Stream sets of tablets-based CDC tables, rebuilt from ScyllaDB's state and history rows.

Tablets keyspaces have no vnode generations. Each CDC log table has its own stream set:
one stream per tablet, whose token is the tablet's last token and whose index is 0
(``create_table_streams_mutation``, ``cdc/generation.cc``). A split or merge makes a new
set at a new timestamp. ScyllaDB stores the oldest set in ``system.cdc_streams_state``
(static ``timestamp`` plus ``last_token -> stream_id`` rows) and later ones as diffs in
``system.cdc_streams_history`` (``stream_state`` 1 = closed, 2 = opened). The virtual table
``system.cdc_streams`` lists, per timestamp, the whole set (state 0 = current) plus what
closed and opened against the previous set; the first set has everything opened.

This module reproduces that: :func:`stream_sets` is ``construct_next_stream_set`` applied
in order, :func:`stream_set_diff` is ``generate_stream_diff`` (``cdc/metadata.cc``), and
:func:`stream_set_views` is ``query_cdc_streams``. Diffs are checked as they are applied,
because a consumer reading state and history in two queries can race ScyllaDB's garbage
collection (which moves the base forward and deletes the history up to it).
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum

from cdcgen.core.errors import InvalidStreamHistory
from cdcgen.core.stream_id import StreamId, new_stream_id
from cdcgen.core.time import generation_timestamp
from cdcgen.core.tokens import check_token


class StreamState(IntEnum):
    """``cdc::stream_state``, the ``stream_state`` tinyint of the history and virtual tables."""

    CURRENT = 0
    CLOSED = 1
    OPENED = 2

    @classmethod
    def from_value(cls, value: int) -> StreamState:
        """``read_stream_state``: anything but 0, 1 or 2 is an error."""
        try:
            return cls(value)
        except ValueError:
            raise InvalidStreamHistory(f"invalid value {value!r} for stream state") from None


def tablet_stream_id(last_token: int, rng: random.Random) -> StreamId:
    """A new stream for the tablet ending at ``last_token`` (``stream_id(last_token, 0)``)."""
    return new_stream_id(last_token, 0, rng)


@dataclass(frozen=True, slots=True)
class TabletStreamSet:
    """A table's streams from ``timestamp`` on, sorted by token (one per tablet)."""

    timestamp: datetime
    streams: tuple[StreamId, ...]

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "timestamp", generation_timestamp(self.timestamp, "stream set timestamp")
        )
        if not isinstance(self.streams, tuple):
            raise InvalidStreamHistory("streams must be a tuple")
        tokens = [stream.token for stream in self.streams]
        for i in range(1, len(tokens)):
            if tokens[i] <= tokens[i - 1]:
                raise InvalidStreamHistory(
                    f"stream set at {self.timestamp.isoformat()} is not sorted by unique tokens: "
                    f"{self.streams[i - 1].hex} then {self.streams[i].hex}"
                )

    @classmethod
    def from_state_rows(
        cls, timestamp: datetime, streams_by_last_token: Mapping[int, StreamId]
    ) -> TabletStreamSet:
        """The base set from ``cdc_streams_state``: its static timestamp and its rows."""
        for last_token, stream in streams_by_last_token.items():
            _check_row_token(last_token, stream, "cdc_streams_state")
        return cls(
            timestamp, tuple(streams_by_last_token[t] for t in sorted(streams_by_last_token))
        )

    def get_stream(self, token: int) -> StreamId:
        """The stream of the tablet holding ``token``: the first with stream token >= token."""
        check_token(token)
        tokens = [stream.token for stream in self.streams]
        position = bisect.bisect_left(tokens, token)
        if position == len(tokens):
            raise LookupError(f"no stream for token {token} in set at {self.timestamp.isoformat()}")
        return self.streams[position]


@dataclass(frozen=True, slots=True)
class StreamHistoryRow:
    """One ``cdc_streams_history`` row: a stream closed or opened at ``timestamp``."""

    timestamp: datetime
    stream_state: StreamState
    last_token: int
    stream_id: StreamId

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "timestamp", generation_timestamp(self.timestamp, "history timestamp")
        )
        object.__setattr__(self, "stream_state", StreamState.from_value(self.stream_state))
        if self.stream_state is StreamState.CURRENT:
            raise InvalidStreamHistory(
                f"history row at {self.timestamp.isoformat()} has state CURRENT; history "
                "holds only closed and opened streams"
            )
        _check_row_token(self.last_token, self.stream_id, "cdc_streams_history")


def _check_row_token(last_token: int, stream: StreamId, table: str) -> None:
    check_token(last_token, "last_token")
    if stream.token != last_token:
        raise InvalidStreamHistory(
            f"{table} row with last_token {last_token} holds stream {stream.hex} "
            f"whose token is {stream.token}"
        )


@dataclass(frozen=True, slots=True)
class StreamSetDiff:
    """Streams closed and opened between two consecutive sets, each sorted by token."""

    closed: tuple[StreamId, ...]
    opened: tuple[StreamId, ...]


def stream_set_diff(before: Sequence[StreamId], after: Sequence[StreamId]) -> StreamSetDiff:
    """``generate_stream_diff``: a token whose stream changed counts as closed + opened."""
    old = {stream.token: stream for stream in before}
    new = {stream.token: stream for stream in after}
    closed = [stream for token, stream in old.items() if new.get(token) != stream]
    opened = [stream for token, stream in new.items() if old.get(token) != stream]
    return StreamSetDiff(_by_token(closed), _by_token(opened))


def _by_token(streams: Iterable[StreamId]) -> tuple[StreamId, ...]:
    return tuple(sorted(streams, key=lambda stream: stream.token))


def apply_stream_diff(
    previous: TabletStreamSet, timestamp: datetime, diff: StreamSetDiff
) -> TabletStreamSet:
    """``construct_next_stream_set``: the previous set minus closed plus opened streams.

    Closing a stream that is not open, or opening one on a token still taken, means the
    history does not continue this set (for example, it was read across a garbage
    collection that moved the base): an :class:`InvalidStreamHistory` error.
    """
    when = generation_timestamp(timestamp, "history timestamp")
    by_token = {stream.token: stream for stream in previous.streams}
    for stream in diff.closed:
        if by_token.get(stream.token) != stream:
            raise InvalidStreamHistory(
                f"history at {when.isoformat()} closes stream {stream.hex}, which is not open "
                f"in the set of {previous.timestamp.isoformat()}"
            )
        del by_token[stream.token]
    for stream in diff.opened:
        if stream.token in by_token:
            raise InvalidStreamHistory(
                f"history at {when.isoformat()} opens stream {stream.hex} on token "
                f"{stream.token}, still held by open stream {by_token[stream.token].hex}"
            )
        by_token[stream.token] = stream
    return TabletStreamSet(when, _by_token(by_token.values()))


def stream_sets(
    base: TabletStreamSet, history: Iterable[StreamHistoryRow]
) -> tuple[TabletStreamSet, ...]:
    """Every stream set of a table, oldest first: the base, then one per history timestamp.

    History rows at or before the base timestamp are skipped: ScyllaDB's garbage
    collection deletes exactly those when it moves the base forward, so they can only be
    leftovers seen by a reader that raced it.
    """
    diffs: dict[datetime, tuple[list[StreamId], list[StreamId]]] = {}
    for row in history:
        if row.timestamp <= base.timestamp:
            continue
        closed, opened = diffs.setdefault(row.timestamp, ([], []))
        (closed if row.stream_state is StreamState.CLOSED else opened).append(row.stream_id)
    sets = [base]
    for timestamp in sorted(diffs):
        closed, opened = diffs[timestamp]
        diff = StreamSetDiff(_by_token(closed), _by_token(opened))
        sets.append(apply_stream_diff(sets[-1], timestamp, diff))
    return tuple(sets)


def stream_set_at(
    base: TabletStreamSet, history: Iterable[StreamHistoryRow], ts: datetime
) -> TabletStreamSet:
    """The set operating at ``ts``: the latest one whose timestamp is ``<= ts``."""
    sets = stream_sets(base, history)
    position = bisect.bisect_right([s.timestamp for s in sets], generation_timestamp(ts, "ts"))
    if position == 0:
        raise LookupError(
            f"{ts.isoformat()} precedes the oldest stream set ({base.timestamp.isoformat()})"
        )
    return sets[position - 1]


@dataclass(frozen=True, slots=True)
class StreamSetView:
    """What ``system.cdc_streams`` shows for one timestamp of one table."""

    timestamp: datetime
    current: tuple[StreamId, ...]
    closed: tuple[StreamId, ...]
    opened: tuple[StreamId, ...]

    def rows(self) -> list[tuple[datetime, StreamState, StreamId]]:
        """``(timestamp, stream_state, stream_id)`` in the virtual table's clustering order."""
        return [
            (self.timestamp, state, stream)
            for state, streams in (
                (StreamState.CURRENT, self.current),
                (StreamState.CLOSED, self.closed),
                (StreamState.OPENED, self.opened),
            )
            for stream in sorted(streams)
        ]


def stream_set_views(
    base: TabletStreamSet, history: Iterable[StreamHistoryRow]
) -> tuple[StreamSetView, ...]:
    """Per timestamp, the current set and its diff against the previous one
    (``query_cdc_streams``): the first view has every stream opened and none closed.
    """
    views = []
    previous: TabletStreamSet | None = None
    for stream_set in stream_sets(base, history):
        if previous is None:
            diff = StreamSetDiff(closed=(), opened=stream_set.streams)
        else:
            diff = stream_set_diff(previous.streams, stream_set.streams)
        views.append(
            StreamSetView(stream_set.timestamp, stream_set.streams, diff.closed, diff.opened)
        )
        previous = stream_set
    return tuple(views)
