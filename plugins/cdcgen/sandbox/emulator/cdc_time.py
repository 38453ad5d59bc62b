"""``cdc$time``: a time UUID carrying a write's timestamp in microseconds.

ScyllaDB builds it with ``UUID_gen::get_random_time_UUID_from_micros`` (``cdc/log.cc``,
``generate_timeuuid``): version 1, the write timestamp in 100 ns units since the
Gregorian epoch (so always a multiple of 10 here), random clock sequence and node. Two
writes at the same microsecond therefore get different UUIDs that sort by time first.
Write timestamps are microseconds since the Unix epoch (``USING TIMESTAMP``).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from uuid import UUID

GREGORIAN_OFFSET_100NS = 0x01B21DD213814000
"""100 ns intervals between 1582-10-15 and 1970-01-01."""

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def timeuuid_from_micros(micros: int, rng: random.Random) -> UUID:
    """A version-1 UUID whose time is ``micros`` since the Unix epoch, random otherwise."""
    ticks = micros * 10 + GREGORIAN_OFFSET_100NS
    if not 0 <= ticks < 1 << 60:
        raise ValueError(f"timestamp {micros} us does not fit a time UUID")
    clock_seq = rng.getrandbits(14)
    return UUID(
        fields=(
            ticks & 0xFFFFFFFF,
            (ticks >> 32) & 0xFFFF,
            ((ticks >> 48) & 0x0FFF) | 0x1000,
            0x80 | (clock_seq >> 8),
            clock_seq & 0xFF,
            rng.getrandbits(48),
        )
    )


def micros_from_timeuuid(value: UUID) -> int:
    """The write timestamp (microseconds since the Unix epoch) inside a ``cdc$time``."""
    if value.version != 1:
        raise ValueError(f"{value} is not a time UUID (version {value.version})")
    return (value.time - GREGORIAN_OFFSET_100NS) // 10


def micros_from_datetime(value: datetime) -> int:
    """Microseconds since the Unix epoch of an aware datetime (exact, no float)."""
    if value.tzinfo is None:
        raise ValueError(f"{value.isoformat()} has no time zone; use UTC")
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def datetime_from_micros(micros: int) -> datetime:
    """The aware UTC datetime of a microsecond timestamp (exact)."""
    return EPOCH + timedelta(microseconds=micros)


def utc_from_driver(value: datetime) -> datetime:
    """cassandra-driver returns naive datetimes that are UTC; make them aware."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
