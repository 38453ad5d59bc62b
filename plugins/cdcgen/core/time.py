"""Time as the pipeline counts it: UTC always, milliseconds for CQL timestamps.

ScyllaDB's generation timestamps and every CQL ``timestamp`` are milliseconds since the
Unix epoch; write times (``USING TIMESTAMP``, the time inside ``cdc$time``) are
microseconds. cassandra-driver returns naive datetimes that are UTC. Every conversion
between those forms lives here once, exact (integer arithmetic, never a float), and a
naive datetime that does not come from the driver is refused: its zone is a guess.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cdcgen.core.errors import InvalidTimestamp
from cdcgen.core.user_text import echo, parse_decimal

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LABEL_FORMAT = "%Y%m%dT%H%M%S."


def as_utc(value: datetime, what: str = "timestamp") -> datetime:
    """``value`` in UTC; naive datetimes are refused because their zone is a guess."""
    if not isinstance(value, datetime):
        raise InvalidTimestamp(f"{what} {value!r} is not a datetime")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidTimestamp(f"{what} {value.isoformat()} has no time zone; use UTC")
    return value.astimezone(UTC)


def naive_as_utc(value: datetime) -> datetime:
    """Aware, in UTC; a naive value is taken to be UTC, as cassandra-driver returns
    ``timestamp`` values and as this project writes them in its JSON records."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def truncate_to_millis(value: datetime) -> datetime:
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def floor_ms(value: datetime) -> datetime:
    """UTC, truncated to the millisecond: CQL timestamps (and ``minTimeuuid``) are ms."""
    return truncate_to_millis(as_utc(value))


def generation_timestamp(value: datetime, what: str = "generation timestamp") -> datetime:
    """A generation timestamp: UTC with millisecond precision (``db_clock``, CQL timestamp)."""
    result = as_utc(value, what)
    if result.microsecond % 1000:
        raise InvalidTimestamp(
            f"{what} {result.isoformat()} has sub-millisecond precision; CQL timestamps are ms"
        )
    return result


def to_micros(value: datetime) -> int:
    """Microseconds since the Unix epoch, exact."""
    delta = as_utc(value) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=micros)


def to_millis(value: datetime) -> int:
    """Milliseconds since the Unix epoch (anything finer is dropped), exact."""
    return to_micros(value) // 1000


def from_millis(millis: int) -> datetime:
    return EPOCH + timedelta(milliseconds=millis)


class MillisBounds:
    """``start``/``end`` of a small picklable record that keeps its bounds as
    ``start_ms``/``end_ms`` integers (what Spark tasks carry)."""

    start_ms: int
    end_ms: int

    @property
    def start(self) -> datetime:
        return from_millis(self.start_ms)

    @property
    def end(self) -> datetime:
        return from_millis(self.end_ms)


def iso_millis(value: datetime) -> str:
    """``2026-11-22T10:15:00.000+00:00``: how a generation timestamp is shown."""
    return as_utc(value).isoformat(timespec="milliseconds")


def time_label(value: datetime) -> str:
    """``20261122T101500.000Z``: sortable, and safe as a Hive partition value."""
    utc = floor_ms(value)
    return utc.strftime(_LABEL_FORMAT) + f"{utc.microsecond // 1000:03d}Z"


def parse_time_label(text: str) -> datetime:
    try:
        return datetime.strptime(text, _LABEL_FORMAT + "%fZ").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"{text!r} is not a time label like 20261122T101500.000Z") from None


def parse_moment(text: str, what: str = "time") -> datetime:
    """Milliseconds since the epoch, or ISO 8601 (``Z`` or an offset; naive means UTC)."""
    text = text.strip()
    digits = text.lstrip("-")
    if digits.isascii() and digits.isdigit():
        try:
            return from_millis(parse_decimal(text, what))
        except (ValueError, OverflowError) as exc:
            raise InvalidTimestamp(f"{what}: not milliseconds since the epoch: {exc}") from None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidTimestamp(f"{what} {echo(text)}: {exc}") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
