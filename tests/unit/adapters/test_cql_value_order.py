"""The database's order of values, from the driver's own type classes."""

from __future__ import annotations

import math
import uuid

from cassandra import cqltypes

from cdcgen.adapters.cql_value_order import CqlValueOrder
from cdcgen.core.operations.table import ColumnKind, TableShape

INT, TEXT = cqltypes.Int32Type, cqltypes.UTF8Type
ADDR = cqltypes.UserType.make_udt_class("ks", "addr", ("street", "zip"), (TEXT, INT))
FROZEN_SET = cqltypes.FrozenType.apply_parameters([cqltypes.SetType.apply_parameters([INT])])
TABLE = TableShape(
    "ks", "t", ("pk",), ("ip", "id", "tid", "f", "pair", "fs"),
    {"v": ColumnKind.ATOMIC, "tags": ColumnKind.SET, "props": ColumnKind.MAP,
     "items": ColumnKind.LIST, "home": ColumnKind.UDT},
)  # fmt: skip
ORDER = CqlValueOrder(
    TABLE,
    {
        "ip": cqltypes.InetAddressType,
        "id": cqltypes.UUIDType,
        "tid": cqltypes.TimeUUIDType,
        "f": cqltypes.DoubleType,
        "pair": cqltypes.FrozenType.apply_parameters(
            [cqltypes.TupleType.apply_parameters([INT, TEXT])]
        ),
        "fs": FROZEN_SET,
        "v": INT,
        "tags": cqltypes.SetType.apply_parameters([TEXT]),
        "props": cqltypes.MapType.apply_parameters([TEXT, INT]),
        "items": cqltypes.ListType.apply_parameters([TEXT]),
        "home": ADDR,
    },
)


def sorted_by(column: str, values: list[object]) -> list[object]:
    return sorted(values, key=lambda v: ORDER.sort_key(column, v))


def test_ties_are_broken_on_each_cell_s_own_cql_bytes() -> None:
    assert ORDER.serialized("v", None, -1) == b"\xff\xff\xff\xff"  # above 1's bytes
    assert ORDER.serialized("props", "k", 2) == b"\x00\x00\x00\x02"  # the map's value
    assert ORDER.serialized("items", uuid.uuid1(), "a") == b"a"
    assert ORDER.serialized("home", "zip", 7) == b"\x00\x00\x00\x07"  # by the field's type
    assert ORDER.serialized("home", "street", "Elm") == b"Elm"
    assert ORDER.serialized("tags", "x", None) == b""  # a set element's cell has no value


def test_a_frozen_set_is_compared_and_serialized_sorted_as_it_is_stored() -> None:
    assert sorted_by("fs", [frozenset({0}), frozenset({5, -1})]) == [frozenset({-1, 5}), {0}]
    stored = cqltypes.SetType.apply_parameters([INT]).serialize([-1, 5], 4)
    assert ORDER.serialized("fs", None, {5, -1}) == bytes(stored)  # whatever the hash order


def test_an_inet_sorts_by_its_address_bytes_not_its_text() -> None:
    # unsigned bytes, then length: ::1 is fifteen zero bytes and a one
    assert sorted_by("ip", ["10.0.0.2", "::1", "9.0.0.1"]) == ["::1", "9.0.0.1", "10.0.0.2"]


def test_time_uuids_sort_by_time_and_uuids_by_version_first() -> None:
    early = uuid.UUID("00000000-0000-1000-8000-ffffffffffff")  # time 0, version 1
    late = uuid.UUID("ffffffff-0000-1000-8000-000000000000")
    assert sorted_by("tid", [late, early]) == [early, late]
    random4 = uuid.UUID("00000000-0000-4000-8000-000000000000")
    assert sorted_by("id", [random4, late, early]) == [early, late, random4]


def test_time_uuids_of_one_tick_compare_their_last_bytes_signed() -> None:
    zero = uuid.UUID("00000000-0000-1000-8000-000000000000")
    high = uuid.UUID("00000000-0000-1000-8080-000000000000")  # 0x80: -128 as a signed byte
    assert sorted_by("tid", [zero, high]) == [high, zero]


def test_a_list_s_cells_sort_by_their_time_uuid_keys() -> None:
    first, second = uuid.UUID(int=(1 << 64) | 0x1000 << 48), uuid.UUID(int=(2 << 64) | 0x1000 << 48)
    assert sorted_by("items", [second, first]) == [first, second]


def test_nan_sorts_after_every_number_and_a_tuple_by_its_components() -> None:
    ordered = sorted_by("f", [math.nan, 2.0, -1.0])
    assert ordered[:2] == [-1.0, 2.0] and math.isnan(ordered[2])  # type: ignore[arg-type]
    assert ORDER.sort_key("f", math.nan) == ORDER.sort_key("f", float("nan"))
    assert ORDER.sort_key("f", -0.0) < ORDER.sort_key("f", 0.0)
    assert sorted_by("pair", [(1, "b"), (1, None), (0, "z")]) == [(0, "z"), (1, None), (1, "b")]


def test_a_map_s_and_a_set_s_elements_sort_by_their_type() -> None:
    assert sorted_by("tags", ["b", "a"]) == ["a", "b"]
    assert sorted_by("props", ["é", "z"]) == ["z", "é"]  # code points: UTF-8 order
