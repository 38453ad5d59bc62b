"""The generation timeline: which generation, and so which stream, a write lands in.

A port of the rules of ScyllaDB's ``cdc::metadata`` (``cdc/metadata.cc``). Generation
``g`` operates in ``[T_g, T_{g+1})``. A coordinator whose clock reads ``C`` accepts a write
with timestamp ``W`` (leeway ``L``, 5 s) only if

* ``W <= C + L`` (else "from the future");
* when ``W <= C - L``: ``W`` falls in the generation operating at ``C - L`` and no later
  generation has started by ``C`` (else "from the past");
* some generation operates at ``W`` (else no stream: a runtime error, not a bad request);
* that generation's description is loaded (a known but unreadable generation rejects
  writes: ScyllaDB prefers unavailability to writing into the wrong streams).

The consequence a consumer relies on: no row can land in generation ``g`` once every
node's clock has passed ``T_{g+1} + L``.

Unlike ScyllaDB this timeline never garbage-collects old generations (it is a consumer's
record of history, not a coordinator's cache); the acceptance rules give the same answers
either way, because a write is only ever placed in a generation operating at or after
``C - L``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import total_ordering
from uuid import UUID

from cdcgen.core.errors import (
    ConflictingGeneration,
    GenerationNotLoaded,
    GenerationTimestampNotIncreasing,
    InvalidTimestamp,
    NoGenerationForWrite,
    UnknownGeneration,
    WriteFromTheFuture,
    WriteFromThePast,
)
from cdcgen.core.stream_id import StreamId
from cdcgen.core.time import as_utc, generation_timestamp, truncate_to_millis
from cdcgen.core.topology import TopologyDescription

DEFAULT_LEEWAY = timedelta(seconds=5)
"""``cdc::get_generation_leeway()``."""

DEFAULT_RING_DELAY = timedelta(seconds=30)
"""ScyllaDB's default ``ring_delay_ms``."""


@total_ordering
@dataclass(frozen=True, eq=True)
class GenerationId:
    """A generation's identity: its timestamp, plus the UUID of its data (v2/v3) if any.

    V1 generations (ScyllaDB 4.3) are identified by the timestamp alone (``uuid=None``).
    Ordered by timestamp, then UUID, which is the order generations operate in.
    """

    timestamp: datetime
    uuid: UUID | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "timestamp", generation_timestamp(self.timestamp))
        if self.uuid is not None and not isinstance(self.uuid, UUID):
            raise InvalidTimestamp(f"generation uuid {self.uuid!r} is not a UUID")

    def _key(self) -> tuple[datetime, bytes]:
        return (self.timestamp, b"" if self.uuid is None else self.uuid.bytes)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, GenerationId):
            return NotImplemented
        return self._key() < other._key()

    def __str__(self) -> str:
        stamp = self.timestamp.isoformat(timespec="milliseconds")
        return stamp if self.uuid is None else f"{stamp}/{self.uuid}"


def new_generation_timestamp(
    now: datetime,
    ring_delay: timedelta = DEFAULT_RING_DELAY,
    leeway: timedelta = DEFAULT_LEEWAY,
    last: datetime | None = None,
    first: bool = False,
) -> datetime:
    """When a new generation should start (``new_generation_timestamp``, ``cdc/generation.cc``).

    ``now + 2 * ring_delay + leeway`` gives every node time to learn the generation before
    it operates; the first generation of a cluster (and ``ring_delay == 0``) gets no delay.
    The result must come after ``last``, the last committed generation's timestamp.
    """
    start = as_utc(now, "now")
    if not first and ring_delay != timedelta(0):
        start = start + 2 * ring_delay + leeway
    start = truncate_to_millis(start)
    if last is not None and start <= as_utc(last, "last generation timestamp"):
        raise GenerationTimestampNotIncreasing(
            f"new generation timestamp {start.isoformat()} does not come after the last "
            f"generation's {as_utc(last).isoformat()}"
        )
    return start


def _show(value: datetime) -> str:
    return value.isoformat(timespec="microseconds")


class GenerationTimeline:
    """Known generations by timestamp, each loaded (with its description) or only prepared."""

    def __init__(self) -> None:
        self._timestamps: list[datetime] = []
        self._descriptions: dict[datetime, TopologyDescription | None] = {}

    def _add(self, timestamp: datetime) -> None:
        if timestamp not in self._descriptions:
            bisect.insort(self._timestamps, timestamp)
            self._descriptions[timestamp] = None

    def prepare(self, gen_ts: datetime) -> bool:
        """Record that a generation exists before its data could be read.

        Returns True while its description still has to be loaded (ScyllaDB's
        ``prepare``); until then writes falling into it are rejected.
        """
        timestamp = generation_timestamp(gen_ts)
        self._add(timestamp)
        return self._descriptions[timestamp] is None

    def insert(self, gen_ts: datetime, description: TopologyDescription) -> bool:
        """Load a generation's description. Returns False if it was already loaded.

        Offering a *different* description for a loaded timestamp is an error: ScyllaDB
        silently keeps the first, but for a consumer that means its metadata source is
        inconsistent and must be looked at.
        """
        timestamp = generation_timestamp(gen_ts)
        if not isinstance(description, TopologyDescription):
            raise TypeError(f"expected a TopologyDescription, got {type(description).__name__}")
        current = self._descriptions.get(timestamp)
        if current is not None:
            if current != description:
                raise ConflictingGeneration(
                    f"generation {timestamp.isoformat()} is already loaded with a different "
                    "description"
                )
            return False
        self._add(timestamp)
        self._descriptions[timestamp] = description
        return True

    def timestamps(self) -> tuple[datetime, ...]:
        """Every known generation timestamp, oldest first."""
        return tuple(self._timestamps)

    def is_loaded(self, gen_ts: datetime) -> bool:
        return self._descriptions.get(generation_timestamp(gen_ts)) is not None

    def description(self, gen_ts: datetime) -> TopologyDescription:
        """The loaded description of a generation."""
        timestamp = self._known(gen_ts)
        description = self._descriptions[timestamp]
        if description is None:
            raise GenerationNotLoaded(f"generation {timestamp.isoformat()} is not loaded")
        return description

    def _known(self, gen_ts: datetime) -> datetime:
        timestamp = generation_timestamp(gen_ts)
        if timestamp not in self._descriptions:
            raise UnknownGeneration(f"no generation with timestamp {timestamp.isoformat()}")
        return timestamp

    def generation_at(self, ts: datetime) -> datetime | None:
        """Timestamp of the generation operating at ``ts`` (the last one starting at or
        before it), or None before the first generation (``gen_used_at``).
        """
        position = bisect.bisect_right(self._timestamps, as_utc(ts))
        return self._timestamps[position - 1] if position else None

    def next_generation(self, gen_ts: datetime) -> datetime | None:
        """Timestamp of the generation that follows ``gen_ts``, if one is known."""
        timestamp = self._known(gen_ts)
        position = bisect.bisect_right(self._timestamps, timestamp)
        return self._timestamps[position] if position < len(self._timestamps) else None

    def operating_interval(self, gen_ts: datetime) -> tuple[datetime, datetime | None]:
        """``[T_g, T_next)``; the end is None while no later generation is known."""
        timestamp = self._known(gen_ts)
        return timestamp, self.next_generation(timestamp)

    def generation_for_write(
        self, write_ts: datetime, now: datetime, leeway: timedelta = DEFAULT_LEEWAY
    ) -> datetime:
        """The generation a coordinator at clock ``now`` puts a write stamped ``write_ts`` in,
        or the :class:`~cdcgen.core.errors.WriteRejected` subclass saying why it refuses the write.
        """
        write = as_utc(write_ts, "write timestamp")
        clock = as_utc(now, "now")
        if write > clock + leeway:
            raise WriteFromTheFuture(
                f"write timestamp {_show(write)} is more than {leeway} after the coordinator's "
                f"clock {_show(clock)}"
            )
        if write <= clock - leeway:
            current = self.generation_at(clock - leeway)
            following = None if current is None else self.next_generation(current)
            superseded = following is not None and following <= clock
            if current is None or write < current or superseded:
                raise WriteFromThePast(
                    f"write timestamp {_show(write)} is at least {leeway} before the "
                    f"coordinator's clock {_show(clock)} and not in its current generation"
                )
        generation = self.generation_at(write)
        if generation is None:
            raise NoGenerationForWrite(
                f"no CDC generation operates at {_show(write)}: the first known starts at "
                + (_show(self._timestamps[0]) if self._timestamps else "(none known)")
            )
        if self._descriptions[generation] is None:
            raise GenerationNotLoaded(
                f"write timestamp {_show(write)} falls in generation {generation.isoformat()}, "
                "whose description is not loaded"
            )
        return generation

    def get_stream(
        self,
        write_ts: datetime,
        token: int,
        now: datetime,
        leeway: timedelta = DEFAULT_LEEWAY,
    ) -> StreamId:
        """The stream a write with partition token ``token`` goes to (``get_vnode_stream``)."""
        generation = self.generation_for_write(write_ts, now, leeway)
        description = self._descriptions[generation]
        assert description is not None  # generation_for_write checked it
        return description.get_stream(token)
