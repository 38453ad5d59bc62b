"""Random values of every CQL type, as cassandra-driver binds them (for the workload).

Each maker draws from the ``random.Random`` it is given, in a fixed order (never by
iterating a set), so a seed replays the same values. What a type's values are:

* natives: ``int`` for the integers and ``varint`` (beyond 64 bits), ``float``,
  ``Decimal`` (with a scale), ``bool``, ``str`` (``inet`` as an IPv4 or IPv6 address),
  ``bytes`` (a ``blob`` holds a few KB), ``uuid.UUID`` (a ``timeuuid`` is version 1),
  ``datetime.date``, the driver's ``Time`` (nanoseconds) and ``Duration``, a UTC
  ``datetime`` with milliseconds (what a ``timestamp`` keeps);
* ``set``, ``list`` and ``dict`` of one to three elements; a tuple or a user type's value
  is a Python tuple (a user type's in field order), which the driver binds by position.

A value nested where Python needs it hashable (a set element, a map key) is made
hashable: a list as a tuple, a set as a frozenset. A map cannot be, so a map inside a set
element or a map key is refused here (the log schema itself handles it).
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from cassandra.util import Duration, Time

from cdcgen.core.cdc_log import timeuuid_from_micros
from cdcgen_dev.emulator.cql_types import ColumnType, TypeKind, UserType
from cdcgen_dev.emulator.state import EmulatorError

ValueMaker = Callable[[random.Random], Any]

_EPOCH_DAY = date(1970, 1, 1)
_TIMESTAMPS_FROM = datetime(2000, 1, 1, tzinfo=UTC)
_DAY_NS = 86_400 * 10**9


def _duration(r: random.Random) -> Duration:
    """Months, days and nanoseconds of one sign (CQL refuses mixed signs)."""
    sign = r.choice((1, -1))
    return Duration(sign * r.randint(0, 36), sign * r.randint(0, 60), sign * r.randrange(_DAY_NS))


def _inet(r: random.Random) -> str:
    if r.random() < 0.5:
        return str(ipaddress.IPv4Address(r.getrandbits(32)))
    return str(ipaddress.IPv6Address(r.getrandbits(128)))


_NATIVE: dict[str, ValueMaker] = {
    "text": lambda r: f"v{r.getrandbits(32):08x}",
    "ascii": lambda r: f"a{r.getrandbits(32):08x}",
    "int": lambda r: r.randint(-(2**31), 2**31 - 1),
    "bigint": lambda r: r.randint(-(2**63), 2**63 - 1),
    "smallint": lambda r: r.randint(-(2**15), 2**15 - 1),
    "tinyint": lambda r: r.randint(-128, 127),
    "varint": lambda r: r.randint(-(2**100), 2**100),
    "double": lambda r: r.random() * 1000,
    "float": lambda r: float(r.randint(0, 1 << 20)) / 64,  # exact in 32 bits
    "decimal": lambda r: Decimal(r.randint(-(10**20), 10**20)).scaleb(-r.randint(0, 12)),
    "boolean": lambda r: r.random() < 0.5,
    "blob": lambda r: r.randbytes(r.randint(1024, 3072)),
    "uuid": lambda r: UUID(int=r.getrandbits(128), version=4),
    "timeuuid": lambda r: timeuuid_from_micros(r.randrange(2**52), r),
    "inet": _inet,
    "date": lambda r: _EPOCH_DAY + timedelta(days=r.randint(-20_000, 30_000)),
    "time": lambda r: Time(r.randrange(_DAY_NS)),
    "timestamp": lambda r: _TIMESTAMPS_FROM + timedelta(milliseconds=r.randrange(10**12)),
    "duration": _duration,
}


def value_maker(
    kind: ColumnType, user_types: Mapping[str, UserType], *, hashable: bool = False
) -> ValueMaker:
    """Random values of ``kind`` (``user_types``: the table's, by name)."""
    if kind.kind is TypeKind.NATIVE:
        return _NATIVE[kind.name]
    if kind.kind is TypeKind.SET:
        element = value_maker(kind.args[0], user_types, hashable=True)
        if hashable:
            return lambda r: frozenset({element(r) for _ in range(r.randint(1, 3))})
        return lambda r: {element(r) for _ in range(r.randint(1, 3))}
    if kind.kind is TypeKind.LIST:
        item = value_maker(kind.args[0], user_types, hashable=hashable)
        if hashable:
            return lambda r: tuple(item(r) for _ in range(r.randint(1, 3)))
        return lambda r: [item(r) for _ in range(r.randint(1, 3))]
    if kind.kind is TypeKind.MAP:
        if hashable:
            raise EmulatorError(f"the workload cannot make {kind.cql()} a set element or key")
        key = value_maker(kind.args[0], user_types, hashable=True)
        value = value_maker(kind.args[1], user_types)
        return lambda r: {key(r): value(r) for _ in range(r.randint(1, 3))}
    if kind.kind is TypeKind.TUPLE:
        return _positional([value_maker(a, user_types, hashable=hashable) for a in kind.args])
    fields = user_types[kind.name].field_types
    return _positional([value_maker(f, user_types, hashable=hashable) for f in fields])


def _positional(makers: list[ValueMaker]) -> ValueMaker:
    """A tuple (or a user type's value, bound by position) of one value per maker."""
    return lambda r: tuple(make(r) for make in makers)
