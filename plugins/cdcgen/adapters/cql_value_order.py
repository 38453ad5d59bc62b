"""A table's values in the database's order, from the driver's type classes: what a mirror's
fold is given of the types (:class:`cdcgen.core.mirror_fold.Fold`).

* **Ties.** Two versions of a cell with the same write time (and TTL) are decided on the
  unsigned bytes of their values' CQL serialization (protocol 4): an atomic column's
  value, a map's or list's element value, a user type's field value by the field's type;
  a set's element cell has no value.
* **Order.** Clustering values and collection elements sort as the CQL type sorts them.
  Numbers, text (UTF-8 sorts as code points), blobs, booleans, timestamps, dates and
  times sort as their driver values; an inet sorts by its address bytes; a time UUID by
  its time and then its last eight bytes, each as a signed byte; a uuid by its version,
  then (version 1) its time, then its bytes; a float's NaN after every number and -0
  before 0; a frozen set by its elements in their order (as it is stored, sorted), and
  frozen lists, maps, tuples and user types component by component, a null first.
  A set inside a frozen value is serialized sorted the same way.
"""

from __future__ import annotations

import ipaddress
import math
import uuid
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from cdcgen.core.operations.table import ColumnKind, TableShape

#: The native protocol version whose serialization the database's comparisons see.
PROTOCOL = 4

_SortKey = Callable[[Any], Any]


class CqlValueOrder:
    """``serialized`` and ``sort_key`` for the columns of ``table``, whose driver type
    classes are ``cqltypes`` (``TableDefinition.cqltypes``)."""

    def __init__(self, table: TableShape, cqltypes: Mapping[str, type]) -> None:
        self.table = table
        self.types = {name: _unfrozen(kind) for name, kind in cqltypes.items()}
        self._keys: dict[str, _SortKey] = {}

    def serialized(self, column: str, key: Any, value: Any) -> bytes:
        kind: Any = self.types[column]
        shape = self.table.columns.get(column, ColumnKind.ATOMIC)
        if shape is ColumnKind.SET:
            return b""
        if shape is ColumnKind.MAP:
            kind = kind.subtypes[1]
        elif shape is ColumnKind.LIST:
            kind = kind.subtypes[0]
        elif shape is ColumnKind.UDT:
            kind = kind.subtypes[list(kind.fieldnames).index(key)]
        return bytes(kind.serialize(_canonical(kind)(value), PROTOCOL))

    def sort_key(self, column: str, value: Any) -> Any:
        """A clustering column's value, or a collection column's element (a set's
        element, a map's key, a list's time UUID), as a key in the type's order."""
        found = self._keys.get(column)
        if found is None:
            kind: Any = self.types[column]
            shape = self.table.columns.get(column, ColumnKind.ATOMIC)
            if shape in (ColumnKind.SET, ColumnKind.MAP):
                kind = kind.subtypes[0]
            found = _uuid_time_key if shape is ColumnKind.LIST else _key_of(kind)
            self._keys[column] = found
        return found(value)


def _unfrozen(kind: Any) -> Any:
    while getattr(kind, "typename", "") == "frozen":
        kind = kind.subtypes[0]
    return kind


def _key_of(kind: Any) -> _SortKey:
    """The sort key of values of driver type ``kind``."""
    kind = _unfrozen(kind)
    name = getattr(kind, "typename", "")
    if name == "inet":
        return lambda value: ipaddress.ip_address(value).packed
    if name == "timeuuid":
        return _uuid_time_key
    if name == "uuid":
        return _uuid_key
    if name in ("float", "double"):
        return _float_key
    if name == "set":  # stored sorted: compared in the element type's order
        element = _key_of(kind.subtypes[0])
        return lambda value: tuple(sorted((1, element(v)) for v in value))
    if name in ("list", "tuple") or hasattr(kind, "fieldnames"):
        parts = [_key_of(sub) for sub in kind.subtypes]

        def components(value: Any) -> tuple[Any, ...]:
            keys = parts if name != "list" else [parts[0]] * len(value)
            return tuple(
                (0,) if v is None else (1, k(v)) for k, v in zip(keys, value, strict=False)
            )

        return components
    if name == "map":
        key, item = (_key_of(sub) for sub in kind.subtypes)
        return lambda value: tuple((key(k), item(v)) for k, v in value.items())
    return _natural


def _natural(value: Any) -> Any:
    return value


def _float_key(value: float) -> tuple[int, float, float]:
    """Every NaN alike and after every number, -0 before 0 (``floating_type_impl``)."""
    if math.isnan(value):
        return (1, 0.0, 0.0)
    return (0, value, math.copysign(1.0, value))


#: A time UUID's last eight bytes compare byte by byte as signed bytes
#: (``timeuuid_tri_compare``): each byte's top bit flipped, then unsigned.
_SIGNED_BYTES = 0x8080808080808080
_LOW = (1 << 64) - 1


def _uuid_time_key(value: uuid.UUID) -> tuple[int, int]:
    return (value.time, (value.int & _LOW) ^ _SIGNED_BYTES)


@cache  # by type class: a tie needs it again for each cell of the column
def _canonical(kind: Any) -> Callable[[Any], Any]:
    """A value as the database stores it, for its serialization: a set's elements sorted
    in their type's order (the driver writes a Python set in hash order), inside any
    frozen list, map value or tuple too."""
    kind = _unfrozen(kind)
    name = getattr(kind, "typename", "")
    if name == "set":
        element, key = _canonical(kind.subtypes[0]), _key_of(kind.subtypes[0])
        return lambda value: sorted((element(v) for v in value), key=key)
    if name == "list":
        element = _canonical(kind.subtypes[0])
        return lambda value: [element(v) for v in value]
    if name == "map":
        item = _canonical(kind.subtypes[1])
        return lambda value: {k: item(v) for k, v in value.items()}
    if name == "tuple":
        parts = [_canonical(sub) for sub in kind.subtypes]
        return lambda value: tuple(
            None if v is None else p(v) for p, v in zip(parts, value, strict=False)
        )
    return _natural


def _uuid_key(value: uuid.UUID) -> tuple[int, int, int]:
    version = (value.int >> 76) & 0xF  # the version nibble, whatever the variant
    return (version, value.time if version == 1 else 0, value.int)
