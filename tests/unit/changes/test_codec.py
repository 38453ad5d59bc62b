"""How every CQL type is kept in the changes lake: lossless, and bindable back.

Driver values here are what cassandra-driver itself decodes (each value is serialized by
the driver's type class and read back), so the converters see exactly what a read task
sees. User types become structs of their fields, tuples structs of ``f0``..., durations
``struct<months, days, nanoseconds>``, at any depth; a lake table that already holds
such a column as text (an earlier version's) keeps getting text.
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import pyarrow as pa
import pytest
from cassandra import cqltypes
from cassandra.util import Date, Duration, Time

from cdcgen.adapters.delta_tables import stored_schema
from cdcgen.changes.codec import FrozenMap, arrow_type_and_converter, driver_converter, driver_value
from cdcgen.changes.columns import (
    LakeBatchBuilder,
    Placement,
    column_specs,
    lake_schema,
    text_columns,
)
from cdcgen.core.cdc_log import timeuuid_from_micros

PROTOCOL = 4
T0_US = 1_795_391_999_999_000


def apply(kind: type, *subtypes: Any) -> Any:
    return kind.apply_parameters(list(subtypes))


POINT = cqltypes.UserType.make_udt_class(
    "ks", "point", ("x", "y"), (cqltypes.DoubleType, cqltypes.DoubleType)
)
ADDRESS = cqltypes.UserType.make_udt_class(
    "ks",
    "address",
    ("street", "number", "tags", "location"),
    (
        cqltypes.UTF8Type,
        cqltypes.Int32Type,
        apply(cqltypes.FrozenType, apply(cqltypes.SetType, cqltypes.UTF8Type)),
        apply(cqltypes.FrozenType, POINT),
    ),
)
TUPLE = apply(cqltypes.TupleType, cqltypes.Int32Type, cqltypes.UTF8Type, POINT)
DURATION = cqltypes.DurationType
MAP_OF_ADDRESSES = apply(cqltypes.MapType, cqltypes.UTF8Type, ADDRESS)
INT_MAP = apply(cqltypes.MapType, cqltypes.Int32Type, cqltypes.Int32Type)
MAP_KEYED_BY_MAPS = apply(cqltypes.MapType, INT_MAP, cqltypes.Int32Type)
PAIR = apply(cqltypes.TupleType, cqltypes.Int32Type, cqltypes.UTF8Type)
LIST_CELLS = apply(cqltypes.MapType, cqltypes.TimeUUIDType, PAIR)  # a non-frozen list's log

POINT_STRUCT = pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.float64())])
ADDRESS_STRUCT = pa.struct(
    [
        pa.field("street", pa.string()),
        pa.field("number", pa.int32()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("location", POINT_STRUCT),
    ]
)
DURATION_STRUCT = pa.struct(
    [
        pa.field("months", pa.int32()),
        pa.field("days", pa.int32()),
        pa.field("nanoseconds", pa.int64()),
    ]
)


def decoded(cqltype: Any, value: Any) -> Any:
    """``value`` as the driver decodes it from the wire."""
    return cqltype.from_binary(cqltype.to_binary(value, PROTOCOL), PROTOCOL)


def stored(cqltype: Any, value: Any) -> Any:
    """A driver value through the lake's Arrow type and back to Python."""
    arrow, convert = arrow_type_and_converter(cqltype)
    lake_value = decoded(cqltype, value)
    if convert is not None:
        lake_value = convert(lake_value)
    return pa.array([lake_value], type=arrow).to_pylist()[0]


def test_user_types_tuples_and_durations_are_structs() -> None:
    assert arrow_type_and_converter(POINT)[0] == POINT_STRUCT
    assert arrow_type_and_converter(ADDRESS)[0] == ADDRESS_STRUCT
    assert arrow_type_and_converter(apply(cqltypes.FrozenType, ADDRESS))[0] == ADDRESS_STRUCT
    assert arrow_type_and_converter(TUPLE)[0] == pa.struct(
        [pa.field("f0", pa.int32()), pa.field("f1", pa.string()), pa.field("f2", POINT_STRUCT)]
    )
    assert arrow_type_and_converter(DURATION)[0] == DURATION_STRUCT
    assert arrow_type_and_converter(MAP_OF_ADDRESSES)[0] == pa.map_(pa.string(), ADDRESS_STRUCT)
    set_of_tuples = apply(cqltypes.SetType, apply(cqltypes.TupleType, cqltypes.Int32Type))
    assert arrow_type_and_converter(set_of_tuples)[0] == pa.list_(
        pa.struct([pa.field("f0", pa.int32())])
    )


def test_struct_values_keep_every_field() -> None:
    home = ("Main", 7, {"a", "b"}, (1.5, -2.25))
    assert stored(ADDRESS, home) == {
        "street": "Main",
        "number": 7,
        "tags": ["a", "b"],
        "location": {"x": 1.5, "y": -2.25},
    }
    # Fields left null (a field update's log value) stay null, not dropped.
    assert stored(ADDRESS, (None, 3, None, None)) == {
        "street": None, "number": 3, "tags": None, "location": None,
    }  # fmt: skip
    assert stored(TUPLE, (4, "x", (0.5, None))) == {"f0": 4, "f1": "x", "f2": {"x": 0.5, "y": None}}
    long = Duration(-14, -3, -(2**40) - 5)  # beyond 32 bits of nanoseconds
    assert stored(DURATION, long) == {"months": -14, "days": -3, "nanoseconds": -(2**40) - 5}
    cells = {UUID(int=1, version=1): (1, "a")}
    assert stored(LIST_CELLS, cells) == [(str(next(iter(cells))), {"f0": 1, "f1": "a"})]
    assert stored(MAP_OF_ADDRESSES, {"k": home})[0][1]["location"] == {"x": 1.5, "y": -2.25}
    assert stored(ADDRESS, None) is None


def test_natives_without_an_arrow_type_are_canonical_text() -> None:
    value = Decimal("-12.3400")
    assert stored(cqltypes.DecimalType, value) == "-12.3400"  # the scale is kept
    assert stored(cqltypes.IntegerType, 2**100 + 1) == str(2**100 + 1)
    assert stored(cqltypes.InetAddressType, "2001:db8::1") == "2001:db8::1"
    stamp = timeuuid_from_micros(T0_US, random.Random(1))
    assert stored(cqltypes.TimeUUIDType, stamp) == str(stamp)
    assert stored(cqltypes.SimpleDateType, date(1900, 1, 2)) == date(1900, 1, 2)
    assert stored(cqltypes.TimeType, Time(86_399_999_999_999)) == 86_399_999_999_999
    assert stored(cqltypes.BytesType, b"\x00" * 3000) == b"\x00" * 3000
    assert stored(cqltypes.BytesType, b"") == b""  # empty, not null


def test_text_form_of_earlier_lakes() -> None:
    """``text_composites``: what lakes written before structs hold, ``str`` of the value."""
    arrow, convert = arrow_type_and_converter(MAP_OF_ADDRESSES, text_composites=True)
    assert arrow == pa.map_(pa.string(), pa.string())
    value = decoded(MAP_OF_ADDRESSES, {"k": ("Main", 7, None, None)})
    assert convert is not None and convert(value) == [("k", str(value["k"]))]
    arrow, convert = arrow_type_and_converter(DURATION, text_composites=True)
    assert arrow == pa.string() and convert is not None
    assert convert(Duration(1, 2, 3)) == "1mo2d3ns"


METADATA = [
    ("ks", "t_scylla_cdc_log", "cdc$stream_id", cqltypes.BytesType),
    ("ks", "t_scylla_cdc_log", "cdc$time", cqltypes.TimeUUIDType),
    ("ks", "t_scylla_cdc_log", "cdc$batch_seq_no", cqltypes.Int32Type),
    ("ks", "t_scylla_cdc_log", "cdc$operation", cqltypes.ByteType),
    ("ks", "t_scylla_cdc_log", "pk", cqltypes.Int32Type),
    ("ks", "t_scylla_cdc_log", "home", ADDRESS),
    ("ks", "t_scylla_cdc_log", "homes", MAP_OF_ADDRESSES),
    ("ks", "t_scylla_cdc_log", "span", DURATION),
    ("ks", "t_scylla_cdc_log", "tags", apply(cqltypes.SetType, cqltypes.UTF8Type)),
]


def test_columns_kept_as_text_are_the_earlier_lakes_text_ones() -> None:
    new = lake_schema(column_specs(METADATA))
    old = lake_schema(column_specs(METADATA, {"home", "homes", "span"}))
    assert text_columns(METADATA, None) == frozenset()  # no table yet: structs
    assert text_columns(METADATA, new) == frozenset()
    assert text_columns(METADATA, old) == {"home", "homes", "span"}
    # One column of each kind, and a column the table does not have yet (new in the log).
    mixed = pa.schema([f for f in new if f.name != "homes"])
    mixed = mixed.set(mixed.get_field_index("span"), old.field("span"))
    assert text_columns(METADATA, mixed) == {"span"}


def test_a_delta_table_written_with_text_keeps_text(tmp_path: Path) -> None:
    """The schema the decision reads is the table's own, from its Delta log (delta-rs)."""
    from deltalake import write_deltalake

    root = tmp_path / "ks.t"
    old = lake_schema(column_specs(METADATA, {"home", "homes", "span"}), with_partitions=False)
    assert stored_schema(root) is None
    write_deltalake(str(root), old.empty_table())
    assert text_columns(METADATA, stored_schema(root)) == {"home", "homes", "span"}
    new = lake_schema(column_specs(METADATA), with_partitions=False)
    write_deltalake(str(tmp_path / "ks.u"), new.empty_table())
    assert text_columns(METADATA, stored_schema(tmp_path / "ks.u")) == frozenset()


def test_batches_hold_struct_columns() -> None:
    specs = column_specs(METADATA)
    schema = lake_schema(specs)
    builder = LakeBatchBuilder(specs, ["pk"], PROTOCOL, schema)
    stamp = timeuuid_from_micros(T0_US, random.Random(2))
    home = decoded(ADDRESS, ("Main", 7, {"a"}, (1.0, 2.0)))
    homes = decoded(MAP_OF_ADDRESSES, {"k": ("Side", None, None, None)})
    span = decoded(DURATION, Duration(0, 1, 2))
    rows = [
        (b"s" * 16, stamp, 0, 1, 1, home, homes, span, decoded(specs[8].cqltype, {"x"})),
        (b"s" * 16, stamp, 1, 1, 1, None, None, None, None),
    ]
    batch = builder.to_batch([(rows, Placement("G", "W", 0))])
    data = batch.to_pydict()
    assert data["home"][0]["location"] == {"x": 1.0, "y": 2.0} and data["home"][1] is None
    side = {"street": "Side", "number": None, "tags": None, "location": None}
    assert data["homes"][0] == [("k", side)]
    assert data["span"] == [{"months": 0, "days": 1, "nanoseconds": 2}, None]
    assert data["tags"] == [["x"], None]
    assert data["write_time"][0] == datetime.fromtimestamp(T0_US / 1e6, UTC)


def test_driver_dates_convert_to_date32() -> None:
    arrow, convert = arrow_type_and_converter(cqltypes.SimpleDateType)
    assert arrow == pa.date32() and convert is not None
    assert convert(Date(date(2026, 1, 2))) == date(2026, 1, 2)


BOUND_BACK = [
        (ADDRESS, ("Main", 7, {"a", "b"}, (1.5, -2.25))),
        (ADDRESS, (None, None, None, None)),
        (TUPLE, (4, "x", (0.5, None))),
        (DURATION, Duration(-14, -3, -(2**40))),
        (MAP_OF_ADDRESSES, {"k": ("Side", 1, None, (0.0, 1.0)), "a": ("A", 2, {"t"}, None)}),
        (LIST_CELLS, {UUID(int=7, version=1): (1, "a"), UUID(int=9, version=1): (2, None)}),
        (apply(cqltypes.SetType, PAIR), {(1, "a"), (2, "b")}),
        (apply(cqltypes.SetType, apply(cqltypes.ListType, cqltypes.Int32Type)), [[1, 2], [0]]),
        (MAP_KEYED_BY_MAPS, FrozenMap([(FrozenMap([(1, 2)]), 3)])),
        (cqltypes.UUIDType, UUID(int=12345, version=4)),
        (cqltypes.TimeUUIDType, timeuuid_from_micros(T0_US, random.Random(3))),
        (cqltypes.DecimalType, Decimal("-1.2300E-9")),
        (cqltypes.IntegerType, -(2**90)),
        (cqltypes.InetAddressType, "2001:db8::1"),
        (cqltypes.SimpleDateType, date(1969, 12, 31)),
        (cqltypes.TimeType, Time(1)),
        (cqltypes.DateType, datetime(2026, 1, 2, 3, 4, 5, 6000)),
        (cqltypes.BytesType, bytes(range(256)) * 10),
]  # fmt: skip


@pytest.mark.parametrize(("cqltype", "value"), BOUND_BACK)
def test_lake_values_bind_back_to_what_was_logged(cqltype: Any, value: Any) -> None:
    """Lossless: the lake's value, turned back into a driver value, decodes to what the
    log held (so a replicator can bind it)."""
    original = decoded(cqltype, value)
    back = driver_value(cqltype, stored(cqltype, value))
    assert decoded(cqltype, back) == original


SET_OF_TEXT = apply(cqltypes.SetType, cqltypes.UTF8Type)


@pytest.mark.parametrize(
    ("cqltype", "value"),
    [
        *BOUND_BACK,
        (SET_OF_TEXT, {"a", "b"}),
        (apply(cqltypes.SetType, cqltypes.UUIDType), {UUID(int=1), UUID(int=2)}),
        (apply(cqltypes.ListType, cqltypes.Int32Type), [3, 1, 3]),
        (apply(cqltypes.MapType, cqltypes.UTF8Type, cqltypes.Int32Type), {"a": 1, "b": 2}),
        (apply(cqltypes.SetType, apply(cqltypes.FrozenType, SET_OF_TEXT)), [["x"], ["y", "z"]]),
    ],
)  # fmt: skip
@pytest.mark.parametrize("hashable", [False, True])
def test_a_converter_resolved_once_converts_as_the_type_walked_per_value(
    cqltype: Any, value: Any, hashable: bool
) -> None:
    """A replication run resolves each column's conversion once: it must give what
    :func:`driver_value` gives, value and Python type alike (a set stays a set, a
    hashable list a tuple), or the bound statement would differ."""
    lake = stored(cqltype, value)
    expected = driver_value(cqltype, lake, hashable=hashable)
    convert = driver_converter(cqltype, hashable=hashable)
    got = lake if convert is None else convert(lake)
    assert got == expected
    assert type(got) is type(expected)
