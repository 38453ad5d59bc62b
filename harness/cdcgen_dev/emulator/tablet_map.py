"""Tablet boundaries and the stream sets a resize creates (pure).

A table with ``2**k`` tablets cuts the ring into equal pieces by the ``k`` high bits of
the unbiased token (``dht::compaction_group_of``); tablet ``i`` ends at
``last_token_of_compaction_group(k, i)``: ``bias(((i + 1) << (64 - k)) - 1)``, and the
last one at the maximum token. ScyllaDB gives each tablet one CDC stream on its last
token (index 0, fresh random bits), and on every split or merge makes a whole new set:
every stream gets new random bits, even where a boundary did not move
(``generate_tablet_resize_update``). A resize timestamp is
``now + 2 * ring_delay + leeway``, at least 1 ms after the previous set.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from cdcgen.core.stream_id import StreamId
from cdcgen.core.tablets import tablet_stream_id
from cdcgen.core.time import truncate_to_millis
from cdcgen.core.timeline import new_generation_timestamp
from cdcgen.core.tokens import bias

MAX_LOG2_TABLETS = 20


class InvalidTabletCount(ValueError):
    """A tablet count that is not a power of two ScyllaDB would use."""


def log2_tablets(count: int) -> int:
    if count < 1 or count & (count - 1) or count.bit_length() - 1 > MAX_LOG2_TABLETS:
        raise InvalidTabletCount(
            f"tablet count {count} must be a power of two between 1 and 2**{MAX_LOG2_TABLETS}"
        )
    return count.bit_length() - 1


def tablet_last_tokens(count: int) -> list[int]:
    """The last token of each of ``count`` tablets, in ring order."""
    bits = log2_tablets(count)
    if bits == 0:
        return [bias(2**64 - 1)]
    return [bias(((i + 1) << (64 - bits)) - 1) for i in range(count)]


def new_tablet_streams(count: int, rng: random.Random) -> tuple[StreamId, ...]:
    """A fresh stream set for ``count`` tablets, sorted by token."""
    return tuple(tablet_stream_id(token, rng) for token in tablet_last_tokens(count))


def resize_timestamp(
    now: datetime, ring_delay: timedelta, leeway: timedelta, previous: datetime
) -> datetime:
    """When the resized set starts: the usual delay, strictly after ``previous``."""
    start = new_generation_timestamp(now, ring_delay, leeway)
    return max(start, truncate_to_millis(previous) + timedelta(milliseconds=1))
