"""The statements that replay a CDC batch on a sink (``cdcgen.core.replication``)."""

from __future__ import annotations

import pytest

from cdcgen.core.cdc_log import Operation
from cdcgen.core.replication import (
    ColumnKind,
    ReplayError,
    SinkTable,
    Statement,
    batch_statements,
)

T = 1_700_000_000_000_000
TABLE = SinkTable(
    "shop",
    "orders",
    ("pk",),
    ("ck1", "ck2"),
    {"qty": ColumnKind.ATOMIC, "tags": ColumnKind.SET, "attrs": ColumnKind.MAP},
)
Q = '"shop"."orders"'


def row(operation: Operation, **values: object) -> dict[str, object]:
    return {"cdc$operation": int(operation), "pk": 1, **values}


def test_an_insert_writes_the_row_marker_and_its_cells_at_the_write_time() -> None:
    insert = row(Operation.INSERT, ck1=2, ck2="a", qty=5, tags={"x"}, **{"cdc$deleted_tags": True})
    assert batch_statements(TABLE, [insert], T) == [
        Statement(
            f'INSERT INTO {Q} ("pk", "ck1", "ck2", "qty", "tags") VALUES (?, ?, ?, ?, ?) '
            "USING TIMESTAMP ?",
            (1, 2, "a", 5, {"x"}, T),
        )
    ]


def test_a_ttl_travels_with_the_write() -> None:
    insert = row(Operation.INSERT, ck1=2, ck2="a", qty=5, **{"cdc$ttl": 600})
    (statement,) = batch_statements(TABLE, [insert], T)
    assert statement.cql.endswith("USING TIMESTAMP ? AND TTL ?")
    assert statement.values[-2:] == (T, 600)


def test_an_update_sets_values_nulls_and_collection_elements() -> None:
    update = row(
        Operation.UPDATE,
        ck1=2,
        ck2="a",
        qty=None,
        tags={"new"},
        attrs=None,
        **{
            "cdc$deleted_qty": True,
            "cdc$deleted_elements_tags": {"old"},
            "cdc$deleted_elements_attrs": {"k"},
        },
    )
    where = '"pk" = ? AND "ck1" = ? AND "ck2" = ?'
    assert batch_statements(TABLE, [update], T) == [
        Statement(
            f'UPDATE {Q} USING TIMESTAMP ? SET "qty" = ?, "tags" = "tags" + ? WHERE {where}',
            (T, None, {"new"}, 1, 2, "a"),
        ),
        Statement(
            f'UPDATE {Q} USING TIMESTAMP ? SET "tags" = "tags" - ?, "attrs" = "attrs" - ? '
            f"WHERE {where}",
            (T, {"old"}, {"k"}, 1, 2, "a"),
        ),
    ]


def test_an_overwritten_collection_is_set_whole() -> None:
    update = row(Operation.UPDATE, ck1=2, ck2="a", attrs={"k": "v"}, **{"cdc$deleted_attrs": True})
    (statement,) = batch_statements(TABLE, [update], T)
    assert 'SET "attrs" = ?' in statement.cql and statement.values[1] == {"k": "v"}


def test_row_and_partition_deletes() -> None:
    assert batch_statements(TABLE, [row(Operation.ROW_DELETE, ck1=2, ck2="a")], T) == [
        Statement(
            f'DELETE FROM {Q} USING TIMESTAMP ? WHERE "pk" = ? AND "ck1" = ? AND "ck2" = ?',
            (T, 1, 2, "a"),
        )
    ]
    assert batch_statements(TABLE, [row(Operation.PARTITION_DELETE)], T) == [
        Statement(f'DELETE FROM {Q} USING TIMESTAMP ? WHERE "pk" = ?', (T, 1))
    ]


def test_a_range_delete_is_its_two_bound_rows() -> None:
    start = row(Operation.RANGE_DELETE_START_EXCLUSIVE, ck1=2, ck2=None)
    end = row(Operation.RANGE_DELETE_END_INCLUSIVE, ck1=5, ck2="z")
    assert batch_statements(TABLE, [start, end], T) == [
        Statement(
            f'DELETE FROM {Q} USING TIMESTAMP ? WHERE "pk" = ? AND ("ck1") > (?) '
            'AND ("ck1", "ck2") <= (?, ?)',
            (T, 1, 2, 5, "z"),
        )
    ]
    open_start = row(Operation.RANGE_DELETE_START_INCLUSIVE)
    (statement,) = batch_statements(TABLE, [open_start, end], T)
    assert ">" not in statement.cql and statement.values == (T, 1, 5, "z")


def test_images_are_not_changes_and_unpaired_bounds_are_refused() -> None:
    images = [row(Operation.PRE_IMAGE, ck1=1, ck2="a"), row(Operation.POST_IMAGE, ck1=1, ck2="a")]
    assert batch_statements(TABLE, images, T) == []
    with pytest.raises(ReplayError, match="start bound without its end"):
        batch_statements(TABLE, [row(Operation.RANGE_DELETE_START_INCLUSIVE, ck1=1)], T)
    with pytest.raises(ReplayError, match="end bound without its start"):
        batch_statements(TABLE, [row(Operation.RANGE_DELETE_END_EXCLUSIVE, ck1=1)], T)


def test_a_change_without_its_key_is_refused_by_name() -> None:
    with pytest.raises(ReplayError, match=r"shop\.orders: key column\(s\) ck2 missing"):
        batch_statements(TABLE, [row(Operation.ROW_DELETE, ck1=1)], T)


def test_names_are_quoted() -> None:
    odd = SinkTable('k"s', "t", ("Key",), (), {"select": ColumnKind.ATOMIC})
    (statement,) = batch_statements(odd, [{"cdc$operation": 1, "Key": 1, "select": 2}], T)
    assert statement.cql == 'UPDATE "k""s"."t" USING TIMESTAMP ? SET "select" = ? WHERE "Key" = ?'
