"""Which stream an emulated coordinator writes a base write's log rows to, or why it refuses.

Two rules from ``cdc/metadata.cc``:

* vnode keyspaces (``get_vnode_stream``): the generation timeline's acceptance rules
  (from the future / from the past / no generation / generation not loaded), then the
  generation's ``get_stream``. That is :class:`cdcgen.core.timeline.GenerationTimeline`.
* tablets keyspaces (``get_tablet_stream_set``): only "from the future" is refused; any
  earlier timestamp goes to the table's stream set operating at it, however old, and the
  stream is the first whose token is ``>=`` the write's token.

The coordinator's clock is the emulated node's (host clock plus its skew), so a skewed
node puts writes where a skewed ScyllaDB node would.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from cdcgen.core.errors import NoGenerationForWrite, WriteFromTheFuture
from cdcgen.core.stream_id import StreamId
from cdcgen.core.tablets import TabletStreamSet
from cdcgen.core.time import as_utc
from cdcgen.core.timeline import GenerationTimeline


class WriteRouter(Protocol):
    def route(self, write_ts: datetime, token: int, now: datetime) -> tuple[datetime, StreamId]:
        """``(generation timestamp, stream)`` for an accepted write; raises WriteRejected."""
        ...

    def streams(self, generation: datetime) -> tuple[StreamId, ...]:
        """Every stream of the generation (or stream set) starting at ``generation``."""
        ...


@dataclass(frozen=True)
class VnodeRouter:
    timeline: GenerationTimeline
    leeway: timedelta

    def route(self, write_ts: datetime, token: int, now: datetime) -> tuple[datetime, StreamId]:
        generation = self.timeline.generation_for_write(write_ts, now, self.leeway)
        return generation, self.timeline.description(generation).get_stream(token)

    def streams(self, generation: datetime) -> tuple[StreamId, ...]:
        return tuple(self.timeline.description(generation).streams())


@dataclass(frozen=True)
class TabletRouter:
    stream_sets: Sequence[TabletStreamSet]
    leeway: timedelta

    def route(self, write_ts: datetime, token: int, now: datetime) -> tuple[datetime, StreamId]:
        write = as_utc(write_ts, "write timestamp")
        clock = as_utc(now, "now")
        if write > clock + self.leeway:
            raise WriteFromTheFuture(
                f"write timestamp {write.isoformat()} is more than {self.leeway} after the "
                f"coordinator's clock {clock.isoformat()}"
            )
        stamps = [s.timestamp for s in self.stream_sets]
        position = bisect.bisect_right(stamps, write)
        if position == 0:
            raise NoGenerationForWrite(
                f"no CDC stream set of this table operates at {write.isoformat()}"
            )
        stream_set = self.stream_sets[position - 1]
        return stream_set.timestamp, stream_set.get_stream(token)

    def streams(self, generation: datetime) -> tuple[StreamId, ...]:
        for stream_set in self.stream_sets:
            if stream_set.timestamp == generation:
                return stream_set.streams
        raise LookupError(f"no stream set starts at {generation.isoformat()}")
