"""A table's values in the database's order, from the driver's type classes: what a mirror's
fold is given of the types (:class:`cdcgen.core.mirror_fold.Fold`).

* **Ties.** Two versions of a cell with the same write time (and TTL) are decided on the
  unsigned bytes of their values' CQL serialization (protocol 4): an atomic column's
  value, a map's or list's element value, a user type's field value by the field's type;
  a set's element cell has no value.
* **Order.** Clustering values and collection elements sort as the CQL type sorts them.
  Numbers, text (UTF-8 sorts as code points), blobs, booleans, timestamps, dates and
  times sort as their driver values; an inet sorts by its address bytes; a time UUID by
  its time and then its bytes; a uuid by its version, then (version 1) its time, then its
  bytes; a float's NaN after every number; frozen collections, tuples and user types
  component by component, a null first. Two time UUIDs of one 100 ns tick sort by their
  bytes unsigned (ScyllaDB compares their last eight bytes signed), a difference no
  generated time UUID makes.
"""

from __future__ import annotations

import ipaddress
import math
import uuid
from collections.abc import Callable, Mapping
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
        return bytes(kind.serialize(value, PROTOCOL))

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
        return lambda value: (1, 0.0) if math.isnan(value) else (0, value)
    if name in ("list", "set", "tuple") or hasattr(kind, "fieldnames"):
        parts = [_key_of(sub) for sub in kind.subtypes]

        def components(value: Any) -> tuple[Any, ...]:
            keys = parts if name not in ("list", "set") else [parts[0]] * len(value)
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


def _uuid_time_key(value: uuid.UUID) -> tuple[int, int]:
    return (value.time, value.int)


def _uuid_key(value: uuid.UUID) -> tuple[int, int, int]:
    version = (value.int >> 76) & 0xF  # the version nibble, whatever the variant
    return (version, value.time if version == 1 else 0, value.int)
