"""What each logged operation does to the table, as typed mutations
(``cdcgen.core.operations``): the one reading of the log the sink's statements and a
mirror's state both start from."""

from __future__ import annotations

import pytest
from change_rows import change_batch

from cdcgen.core.cdc_log import Operation
from cdcgen.core.operations.decode import mutations
from cdcgen.core.operations.errors import ReplayError
from cdcgen.core.operations.mutations import (
    AddElements,
    Bound,
    NullFields,
    Overwrite,
    PartitionDelete,
    RangeDelete,
    RemoveElements,
    RowDelete,
    RowWrite,
    SetFields,
    SetValue,
)
from cdcgen.core.operations.table import ColumnKind, TableShape
from cdcgen.core.operations.ttl_expiry import expired, remaining_ttl

T = 1_700_000_000_000_000
TABLE = TableShape(
    "shop", "orders", ("pk",), ("ck",),
    {"qty": ColumnKind.ATOMIC, "tags": ColumnKind.SET, "attrs": ColumnKind.MAP,
     "home": ColumnKind.UDT, "note": ColumnKind.ATOMIC, "items": ColumnKind.LIST},
    static=frozenset({"note"}), fields={"home": ("street", "zip")},
)  # fmt: skip


def decoded(*rows: dict[str, object]) -> list[object]:
    logged = [{"cdc$operation": int(r.pop("op")), "pk": 1, **r} for r in map(dict, rows)]
    batch = change_batch(logged, T)
    return mutations(TABLE, batch, range(len(batch)))  # type: ignore[return-value]


def test_an_insert_writes_its_marker_and_collections_whole() -> None:
    (write,) = decoded(
        {"op": Operation.INSERT, "ck": 2, "qty": 5, "tags": {"x"}, "cdc$deleted_tags": True,
         "home": ("Elm", None), "cdc$deleted_home": True, "cdc$ttl": 60}
    )  # fmt: skip
    assert write == RowWrite(
        (1, 2), False, True, T, 60,
        (SetValue("qty", 5), Overwrite("tags", {"x"}), Overwrite("home", ("Elm", None))),
    )  # fmt: skip


def test_a_list_changes_as_its_log_column_says_cells_by_time_uuid() -> None:
    (appended, removed, replaced) = (
        decoded({"op": Operation.UPDATE, "ck": 2, **cells})[0]
        for cells in (
            {"items": {"t1": "a", "t2": "b"}},
            {"cdc$deleted_elements_items": {"t1"}},
            {"items": {"t3": "c"}, "cdc$deleted_items": True},
        )
    )
    assert isinstance(appended, RowWrite) and isinstance(removed, RowWrite)
    assert appended.cells == (AddElements("items", {"t1": "a", "t2": "b"}),)
    assert removed.cells == (RemoveElements("items", {"t1"}),)
    assert isinstance(replaced, RowWrite)
    assert replaced.cells == (Overwrite("items", {"t3": "c"}),)
    expired_append = expired(TABLE, appended)
    assert expired_append.cells == (RemoveElements("items", {"t1", "t2"}),)


def test_an_update_writes_only_the_cells_it_names() -> None:
    (write,) = decoded(
        {"op": Operation.UPDATE, "ck": 2, "qty": None, "cdc$deleted_qty": True,
         "tags": {"new"}, "cdc$deleted_elements_tags": {"old"},
         "attrs": {"k": "v"}, "home": ("Oak", None), "cdc$deleted_elements_home": {1}}
    )  # fmt: skip
    assert isinstance(write, RowWrite) and not write.marker and write.ttl is None
    assert write.cells == (
        SetValue("qty", None),
        AddElements("tags", {"new"}), RemoveElements("tags", {"old"}),
        AddElements("attrs", {"k": "v"}),
        SetFields("home", (("street", "Oak"),)), NullFields("home", ("zip",)),
    )  # fmt: skip


def test_an_overwritten_collection_is_replaced_and_an_empty_add_is_nothing() -> None:
    (write,) = decoded(
        {"op": Operation.UPDATE, "ck": 2, "attrs": None, "cdc$deleted_attrs": True,
         "tags": set(), "home": (None, None)}
    )  # fmt: skip
    assert isinstance(write, RowWrite) and write.cells == (Overwrite("attrs", None),)


def test_a_static_rows_change_is_the_partitions_and_never_has_a_marker() -> None:
    for operation in (Operation.INSERT, Operation.UPDATE):
        (write,) = decoded({"op": operation, "note": "n"})
        assert write == RowWrite((1,), True, False, T, None, (SetValue("note", "n"),))
    with pytest.raises(ReplayError, match=r"a static row's change sets column\(s\) qty"):
        decoded({"op": Operation.UPDATE, "note": "n", "qty": 1})
    with pytest.raises(ReplayError, match=r"a clustering row's change sets column\(s\) note"):
        decoded({"op": Operation.UPDATE, "ck": 1, "cdc$deleted_note": True})


def test_deletes_carry_their_keys_and_a_range_its_bounds_in_clustering_order() -> None:
    assert decoded({"op": Operation.ROW_DELETE, "ck": 3}) == [RowDelete((1, 3), T)]
    assert decoded({"op": Operation.PARTITION_DELETE}) == [PartitionDelete((1,), T)]
    assert decoded(
        {"op": Operation.RANGE_DELETE_START_EXCLUSIVE, "ck": 2},
        {"op": Operation.RANGE_DELETE_END_INCLUSIVE},
    ) == [RangeDelete((1,), Bound((2,), False), Bound((), True), T)]  # open past 2


def test_the_deletes_scylladb_makes_itself_delete_as_a_client_s_do() -> None:
    # -3 and -4 (cdc/log.hh's service_row_delete, service_partition_delete): a row or
    # partition whose TTL ran out (Alternator, a table's per-row TTL)
    assert decoded({"op": Operation.SERVICE_ROW_DELETE, "ck": 2}) == [RowDelete((1, 2), T)]
    assert decoded({"op": Operation.SERVICE_PARTITION_DELETE}) == [PartitionDelete((1,), T)]
    assert Operation(-3) is Operation.SERVICE_ROW_DELETE


def test_a_code_scylladb_does_not_have_is_refused_by_name() -> None:
    with pytest.raises(ReplayError, match=r"cdc\$operation 42 .* not one of ScyllaDB's codes"):
        decoded({"op": 42, "ck": 2})


def test_a_batch_holds_several_parts_and_images_are_none_of_them() -> None:
    parts = decoded(
        {"op": Operation.PRE_IMAGE, "ck": 1, "qty": 0},
        {"op": Operation.UPDATE, "ck": 1, "qty": 1},
        {"op": Operation.RANGE_DELETE_START_INCLUSIVE, "ck": 5},
        {"op": Operation.RANGE_DELETE_END_EXCLUSIVE, "ck": 9},
        {"op": Operation.POST_IMAGE, "ck": 1, "qty": 1},
    )
    assert [type(p).__name__ for p in parts] == ["RowWrite", "RangeDelete"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"op": Operation.RANGE_DELETE_START_INCLUSIVE, "ck": 1}], "start bound without its end"),
        ([{"op": Operation.RANGE_DELETE_END_INCLUSIVE}], "end bound without its start"),
        ([{"op": Operation.RANGE_DELETE_START_INCLUSIVE},
          {"op": Operation.UPDATE, "ck": 1, "qty": 1}], "start bound without its end"),
        ([{"op": Operation.ROW_DELETE, "pk": None}], r"key column\(s\) pk missing"),
        ([{"op": Operation.UPDATE, "ck": 1, "cdc$deleted_elements_home": {5}}], "field index 5"),
    ],
)  # fmt: skip
def test_a_batch_the_log_cannot_have_written_is_refused_by_name(
    rows: list[dict[str, object]], message: str
) -> None:
    with pytest.raises(ReplayError, match=message):
        decoded(*rows)


def test_a_value_the_codec_could_not_convert_refuses_its_batch() -> None:
    batch = change_batch([{"cdc$operation": 1, "pk": 1, "ck": 1, "qty": 2}], T)
    broken = type(batch)(**{**batch.__dict__, "errors": {0: "qty: 'x' is not a value of it"}})
    with pytest.raises(ReplayError, match="qty: 'x' is not a value of it"):
        mutations(TABLE, broken, range(1))


def test_a_ttl_expires_at_the_write_second_plus_the_ttl() -> None:
    assert remaining_ttl(T, 60, T + 59_999_999) == 1
    assert remaining_ttl(T + 999_999, 60, T + 60_000_000) == 0  # whole seconds
    assert remaining_ttl(T, 60, T + 61_000_000) == -1


def test_an_expired_write_is_the_tombstones_its_cells_became() -> None:
    (write,) = decoded(
        {"op": Operation.UPDATE, "ck": 2, "qty": 5, "tags": {"x"},
         "cdc$deleted_elements_tags": {"y"}, "attrs": [("k", "v")], "home": ("Elm", None),
         "cdc$deleted_elements_home": {1}, "cdc$ttl": 10}
    )  # fmt: skip
    assert isinstance(write, RowWrite)
    assert expired(TABLE, write) == RowWrite(
        (1, 2), False, False, T, None,
        (SetValue("qty", None), RemoveElements("tags", {"x", "y"}),
         RemoveElements("attrs", {"k"}), NullFields("home", ("street", "zip"))),
    )  # fmt: skip
    (insert,) = decoded(
        {"op": Operation.INSERT, "ck": 2, "tags": {"a"}, "cdc$deleted_tags": True, "cdc$ttl": 5}
    )
    assert isinstance(insert, RowWrite) and insert.marker
    assert expired(TABLE, insert).cells == (Overwrite("tags", None), RemoveElements("tags", {"a"}))
    assert not expired(TABLE, insert).marker
