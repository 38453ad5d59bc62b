"""Values between the driver and the changes lake, both ways: how each CQL type is
stored in the lake (its Arrow type and the converter of one driver value; the driver's
type classes, ``cassandra.cqltypes``, as the result metadata gives them), and how the
lake's rows become a :class:`~cdcgen.core.change_batch.ChangeBatch` of what the driver
binds.

Every value is kept losslessly, in a type a reader can bind back to a database:

* integers, floats, booleans, text and blobs as the matching Arrow type; ``timestamp`` a
  UTC timestamp in microseconds; ``date`` a date32; ``time`` int64 nanoseconds of the day;
* uuid, timeuuid, inet, decimal and varint, which have no exact Arrow type, as their
  canonical text (a decimal keeps its scale);
* sets and lists as lists, maps as maps (a non-frozen list's log column is a map of its
  cells' time UUIDs), elements typed the same way;
* a user-defined type as a struct of its fields, named and ordered as the type's; a
  tuple as a struct of ``f0``, ``f1``, ...; a ``duration`` as a struct of ``months``
  (int32), ``days`` (int32) and ``nanoseconds`` (int64); at any depth.

Lakes written before user types, tuples and durations were structs hold them as text
(``str`` of the driver's value, at whatever depth): ``text_composites`` gives that form,
:func:`holds_text_for_struct` recognises it in a table's schema. :func:`driver_value`
turns a lake value back into what the driver binds; :func:`change_batch` turns a whole
batch of lake rows, a column at a time (:func:`decoder` and :func:`removed_decoder` per
column, their type walked once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from uuid import UUID

from cdcgen.core.cdc_log import (
    BATCH_SEQ_NO,
    DELETED_ELEMENTS_PREFIX,
    DELETED_PREFIX,
    OPERATION,
    STREAM_ID,
    TIME,
    TTL,
)
from cdcgen.core.change_batch import NOT_REPLAYED, WRITE_TIME, ChangeBatch
from cdcgen.core.operations.table import ColumnKind

if TYPE_CHECKING:
    import pyarrow as pa

Converter = Callable[[Any], Any]


def text_value(value: Any) -> Any:
    """A value as text (``str``), null as null."""
    return None if value is None else str(value)


def _typename(cqltype: Any) -> str:
    name = str(getattr(cqltype, "typename", ""))
    if name == "frozen":
        return _typename(cqltype.subtypes[0])
    return name


def _unfrozen(cqltype: Any) -> Any:
    return cqltype.subtypes[0] if str(getattr(cqltype, "typename", "")) == "frozen" else cqltype


_SCALARS: dict[str, tuple[str, Converter | None]] = {
    "int": ("int32", None),
    "bigint": ("int64", None),
    "counter": ("int64", None),
    "smallint": ("int16", None),
    "tinyint": ("int8", None),
    "text": ("string", None),
    "varchar": ("string", None),
    "ascii": ("string", None),
    "boolean": ("bool_", None),
    "blob": ("binary", None),
    "float": ("float32", None),
    "double": ("float64", None),
    "timestamp": ("timestamp", None),
    "date": ("date32", lambda v: None if v is None else v.date()),
    "time": ("int64", lambda v: None if v is None else int(v.nanosecond_time)),
}


def arrow_type_and_converter(
    cqltype: Any, *, text_composites: bool = False
) -> tuple[pa.DataType, Converter | None]:
    """The Arrow type a CQL type (the driver's type class) is stored as, and how to
    convert one driver value (None: as it is). ``text_composites``: user types, tuples
    and durations as text, as lakes written before they were structs hold them."""
    import pyarrow as pa

    cqltype = _unfrozen(cqltype)
    name = _typename(cqltype)
    if name in _SCALARS:
        kind, convert = _SCALARS[name]
        if kind == "timestamp":
            return pa.timestamp("us", tz="UTC"), None
        return getattr(pa, kind)(), convert
    if name in ("list", "set"):
        element, convert_element = arrow_type_and_converter(
            cqltype.subtypes[0], text_composites=text_composites
        )

        def convert_items(value: Any) -> Any:
            if value is None:
                return None
            if convert_element is None:
                return list(value)
            return [convert_element(item) for item in value]

        return pa.list_(element), convert_items
    if name == "map":
        key, convert_key = arrow_type_and_converter(
            cqltype.subtypes[0], text_composites=text_composites
        )
        item, convert_item = arrow_type_and_converter(
            cqltype.subtypes[1], text_composites=text_composites
        )

        def convert_map(value: Any) -> Any:
            if value is None:
                return None
            return [
                (
                    k if convert_key is None else convert_key(k),
                    v if convert_item is None else convert_item(v),
                )
                for k, v in value.items()
            ]

        return pa.map_(key, item), convert_map
    if not text_composites:
        fields = _composite_fields(cqltype, name)
        if fields is not None:
            return _struct(fields, text_composites=text_composites)
    # uuid, timeuuid, inet, decimal, varint, vector (and, in an earlier lake, the rest).
    return pa.string(), text_value


_DURATION = (("months", "int"), ("days", "int"), ("nanoseconds", "bigint"))


def _composite_fields(cqltype: Any, name: str) -> list[tuple[str, Any]] | None:
    """A user type's, a tuple's or a duration's fields as (name, driver type or scalar
    name); None for any other type. A user type's class carries ``fieldnames`` (its
    ``typename`` is the type's own name, so it is told apart by that attribute); a
    tuple's is ``tuple``, with its component types in ``subtypes``."""
    field_names = getattr(cqltype, "fieldnames", None)
    if field_names is not None:
        return list(zip(field_names, cqltype.subtypes, strict=True))
    if name == "tuple":
        return [(f"f{number}", sub) for number, sub in enumerate(cqltype.subtypes)]
    if name == "duration":
        return list(_DURATION)
    return None


def _struct(
    fields: Sequence[tuple[str, Any]], *, text_composites: bool
) -> tuple[pa.DataType, Converter]:
    """A struct of ``fields``, each typed recursively; a driver value is read by position
    (a tuple, or a user type's named tuple) or, failing that, by attribute (a
    ``Duration``, a user type mapped to a class)."""
    import pyarrow as pa

    names = [field_name for field_name, _ in fields]
    typed = []
    for _, sub in fields:
        if isinstance(sub, str):  # a duration's parts
            kind, convert = getattr(pa, _SCALARS[sub][0])(), None
        else:
            kind, convert = arrow_type_and_converter(sub, text_composites=text_composites)
        typed.append((kind, convert))
    struct = pa.struct([pa.field(n, kind) for n, (kind, _) in zip(names, typed, strict=True)])
    converters = [convert for _, convert in typed]

    def convert_struct(value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, tuple):
            parts: Sequence[Any] = value
        else:
            parts = [getattr(value, field_name, None) for field_name in names]
        return {
            field_name: part if convert is None or part is None else convert(part)
            for field_name, part, convert in zip(names, parts, converters, strict=False)
        }

    return struct, convert_struct


def holds_text_for_struct(stored: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether ``stored`` (a lake table's type of a column) has a string where
    ``wanted`` (the type this version writes) has a struct, at the same depth: the
    column was written in the text form of earlier versions."""
    import pyarrow as pa

    if pa.types.is_struct(wanted):
        return bool(
            pa.types.is_string(stored)
            or pa.types.is_large_string(stored)
            or pa.types.is_string_view(stored)
        )
    if pa.types.is_map(wanted):
        return pa.types.is_map(stored) and (
            holds_text_for_struct(stored.key_type, wanted.key_type)
            or holds_text_for_struct(stored.item_type, wanted.item_type)
        )
    if pa.types.is_list(wanted):
        return (pa.types.is_list(stored) or pa.types.is_large_list(stored)) and (
            holds_text_for_struct(stored.value_type, wanted.value_type)
        )
    return False


class FrozenMap(tuple[tuple[Any, Any], ...]):
    """A map's pairs where Python needs a hashable value (a set element, a map key): the
    driver binds anything with ``items()`` as a map."""

    def items(self) -> tuple[tuple[Any, Any], ...]:
        return tuple(self)


#: Natives the lake keeps as text, and how their text is read back.
_FROM_TEXT: dict[str, Converter] = {
    "uuid": UUID,
    "timeuuid": UUID,
    "decimal": Decimal,
    "varint": int,
}


def driver_converter(cqltype: Any, *, hashable: bool = False) -> Converter | None:
    """:func:`driver_value` for one type, its type walked once instead of per value (a
    replication run converts every value of a column the same way); None when the lake's
    value is what the driver binds. Called with a value that is not None."""
    cqltype = _unfrozen(cqltype)
    name = _typename(cqltype)
    if name in _FROM_TEXT:
        native = _FROM_TEXT[name]
        return lambda value: native(value) if isinstance(value, str) else value
    if name in ("list", "set"):
        wholes: dict[tuple[str, bool], Callable[[Any], Any]] = {
            ("set", False): set, ("set", True): frozenset,
            ("list", False): list, ("list", True): tuple,
        }  # fmt: skip
        whole = wholes[name, hashable]
        element = cqltype.subtypes[0]
        if _typename(element) in (*_SCALARS, *_FROM_TEXT):  # elements are never null
            inner = driver_converter(element, hashable=True)
            if inner is None:
                return whole
            return lambda value: whole(map(inner, value))
    elif name == "map":
        key, item = cqltype.subtypes
        if not hashable and all(_typename(t) in _SCALARS for t in (key, item)):
            return lambda value: dict(value.items() if isinstance(value, Mapping) else value)
    elif name in _SCALARS or _composite_fields(cqltype, name) is None:
        return None
    return lambda value: driver_value(cqltype, value, hashable=hashable)


def driver_value(cqltype: Any, value: Any, *, hashable: bool = False) -> Any:
    """A lake value (as pyarrow's ``to_pylist`` or a Spark row holds it) back as
    cassandra-driver binds it for ``cqltype``: the inverse of :func:`arrow_type_and_converter`.

    Structs become tuples (a user type's in field order, read by field name) or a
    ``Duration``; uuid, timeuuid, decimal and varint text their values; lists, sets and
    maps (a list of pairs) a list, set and dict. ``hashable``: for a set element or a map
    key, lists become tuples, sets frozensets and maps :class:`FrozenMap`.
    """
    if value is None:
        return None
    cqltype = _unfrozen(cqltype)
    name = _typename(cqltype)
    if name in _FROM_TEXT:
        return _FROM_TEXT[name](value) if isinstance(value, str) else value
    if name in ("list", "set"):
        sub = cqltype.subtypes[0]
        items = [driver_value(sub, v, hashable=hashable or name == "set") for v in value]
        if name == "set":
            return frozenset(items) if hashable else set(items)
        return tuple(items) if hashable else items
    if name == "map":
        key, item = cqltype.subtypes
        pairs = value.items() if isinstance(value, Mapping) else value
        converted = [
            (driver_value(key, k, hashable=True), driver_value(item, v, hashable=hashable))
            for k, v in pairs
        ]
        return FrozenMap(converted) if hashable else dict(converted)
    fields = None if name in _SCALARS else _composite_fields(cqltype, name)
    if fields is None:
        return value
    parts = [value[f] if isinstance(value, Mapping) else getattr(value, f) for f, _ in fields]
    if name == "duration":
        from cassandra.util import Duration

        return Duration(*parts)
    return tuple(
        driver_value(sub, part, hashable=hashable)
        for (_, sub), part in zip(fields, parts, strict=True)
    )


# --- lake rows back as the driver binds them --------------------------------------------

#: Types whose lake value is what the driver binds (no converter is needed).
_AS_STORED = frozenset(
    {
        "ascii", "bigint", "blob", "boolean", "date", "double", "float", "inet", "int",
        "smallint", "text", "time", "timestamp", "tinyint", "varchar",
    }
)  # fmt: skip


def decoder(cqltype: Any) -> Converter | None:
    """Lake value -> driver value for a column of the driver's type ``cqltype``; None
    when the lake's value is bound as it is."""
    if str(getattr(cqltype, "typename", "")) in _AS_STORED:
        return None
    return driver_converter(cqltype)


def removed_decoder(kind: ColumnKind, cqltype: Any) -> Converter:
    """``cdc$deleted_elements_<col>`` -> what the log says was removed: a set's elements,
    a map's keys, a user type's field indices."""
    if kind is ColumnKind.UDT:
        return lambda value: {int(v) for v in value}
    element = driver_converter(cqltype.subtypes[0], hashable=True)
    if element is None:
        return set
    return lambda value: set(map(element, value))


def change_batch(table: pa.Table, decoders: Mapping[str, Converter]) -> ChangeBatch:
    """``table``'s rows (lake columns) as a change batch, each column of ``decoders``
    (base columns and ``cdc$deleted_elements_<col>`` by name) converted."""
    import pyarrow as pa

    columns: dict[str, Sequence[Any]] = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        if name == WRITE_TIME:
            column = column.cast(pa.timestamp("us", "UTC")).cast(pa.int64())
        elif name in NOT_REPLAYED:
            continue
        columns[name] = column.to_pylist()
    return batch_of_columns(columns, decoders, table.num_rows)


def batch_of_columns(
    columns: Mapping[str, Sequence[Any]], decoders: Mapping[str, Converter], size: int
) -> ChangeBatch:
    """A change batch of lake values by column (``write_time`` in microseconds); a value
    ``decoders`` cannot convert is kept as the row's error, first column first."""
    errors: dict[int, str] = {}
    decoded = dict(columns)
    for name, convert in decoders.items():
        values = columns.get(name)
        if values is not None:
            decoded[name] = _decoded(name, values, convert, errors)
    cells: dict[str, Sequence[Any]] = {}
    deleted: dict[str, Sequence[Any]] = {}
    removed: dict[str, Sequence[Any]] = {}
    for name, values in decoded.items():
        if name.startswith(DELETED_ELEMENTS_PREFIX):
            removed[name.removeprefix(DELETED_ELEMENTS_PREFIX)] = values
        elif name.startswith(DELETED_PREFIX):
            deleted[name.removeprefix(DELETED_PREFIX)] = values
        elif not name.startswith("cdc$") and name != WRITE_TIME:
            cells[name] = values
    nulls = [None] * size

    def meta(name: str) -> Sequence[Any]:
        return decoded.get(name, nulls)

    return ChangeBatch(
        meta(STREAM_ID), meta(TIME), meta(BATCH_SEQ_NO), meta(OPERATION), meta(TTL),
        meta(WRITE_TIME), cells, deleted, removed, errors,
    )  # fmt: skip


def _decoded(
    name: str, values: Sequence[Any], convert: Converter, errors: dict[int, str]
) -> list[Any]:
    out: list[Any] = []
    append = out.append
    for row, value in enumerate(values):
        if value is None:
            append(None)
            continue
        try:
            append(convert(value))
        except (ValueError, ArithmeticError, KeyError, TypeError) as exc:
            errors.setdefault(row, f"{name}: {value!r} is not a value of it ({exc})")
            append(None)
    return out
