"""The statements that replay a CDC batch on a sink (``cdcgen.core.sink_statements``, on
the mutations of ``cdcgen.core.operations``)."""

from __future__ import annotations

import pytest
from change_rows import batch_statements

from cdcgen.core.cdc_log import Operation, TableRef
from cdcgen.core.operations.errors import ReplayError
from cdcgen.core.operations.table import ColumnKind, TableShape
from cdcgen.core.operations.ttl_expiry import remaining_ttl
from cdcgen.core.sink_statements import Statement
from cdcgen.core.snapshot_copy import CopyLayout

T = 1_700_000_000_000_000
NOW = T + 100 * 1_000_000  # replayed 100 s after the write
TABLE = TableShape(
    "shop",
    "orders",
    ("pk",),
    ("ck1", "ck2"),
    {"qty": ColumnKind.ATOMIC, "tags": ColumnKind.SET, "attrs": ColumnKind.MAP,
     "home": ColumnKind.UDT, "note": ColumnKind.ATOMIC},
    static=frozenset({"note"}),
    fields={"home": ("street", "zip")},
)  # fmt: skip
Q = '"shop"."orders"'


def row(operation: Operation, **values: object) -> dict[str, object]:
    return {"cdc$operation": int(operation), "pk": 1, **values}


def test_an_insert_writes_the_row_marker_and_its_cells_at_the_write_time() -> None:
    insert = row(Operation.INSERT, ck1=2, ck2="a", qty=5, tags={"x"}, **{"cdc$deleted_tags": True})
    assert batch_statements(TABLE, [insert], T, now_us=NOW) == [
        Statement(
            f'INSERT INTO {Q} ("pk", "ck1", "ck2", "qty", "tags") VALUES (?, ?, ?, ?, ?) '
            "USING TIMESTAMP ?",
            (1, 2, "a", 5, {"x"}, T),
        )
    ]


def test_a_ttl_counts_from_the_original_write() -> None:
    insert = row(Operation.INSERT, ck1=2, ck2="a", qty=5, **{"cdc$ttl": 600})
    (statement,) = batch_statements(TABLE, [insert], T, now_us=NOW)
    assert statement.cql.endswith("USING TIMESTAMP ? AND TTL ?")
    assert statement.values[-2:] == (T, 500)  # 600 s from the write, 100 s of them gone
    assert remaining_ttl(T + 999_999, 60, T + 60_000_000) == 0  # whole seconds, as Cassandra


def test_an_expired_insert_is_written_as_the_tombstones_its_cells_are() -> None:
    insert = row(Operation.INSERT, ck1=2, ck2="a", qty=5, **{"cdc$ttl": 60})
    (statement,) = batch_statements(TABLE, [insert], T, now_us=NOW)
    assert statement == Statement(
        f'UPDATE {Q} USING TIMESTAMP ? SET "qty" = ? WHERE "pk" = ? AND "ck1" = ? AND "ck2" = ?',
        (T, None, 1, 2, "a"),
    )  # no row marker, no live cell


def test_expired_elements_and_fields_are_removed_not_written() -> None:
    update = row(
        Operation.UPDATE, ck1=2, ck2="a", tags={"x"}, attrs={"k": "v"}, home=("Elm", None),
        **{"cdc$ttl": 10},
    )  # fmt: skip
    statements = batch_statements(TABLE, [update], T, now_us=NOW)
    assert [s.values for s in statements] == [(T, {"x"}, {"k"}, None, 1, 2, "a")]
    assert statements[0].cql == (
        f'UPDATE {Q} USING TIMESTAMP ? SET "tags" = "tags" - ?, "attrs" = "attrs" - ?, '
        '"home"."street" = ? WHERE "pk" = ? AND "ck1" = ? AND "ck2" = ?'
    )


@pytest.mark.parametrize("flagged", [True, False], ids=["flagged", "unflagged"])
def test_an_expired_insert_of_a_collection_leaves_its_overwrite(flagged: bool) -> None:
    """An insert writes a collection whole, which ScyllaDB logs with ``cdc$deleted_<col>``;
    a log row without the flag is read the same way: the insert replaced the collection
    (its tombstone stays once the TTL ran out) and its elements are removed."""
    insert = row(
        Operation.INSERT, ck1=2, ck2="a", tags={"x"},
        **{"cdc$ttl": 10, "cdc$deleted_tags": flagged or None},
    )  # fmt: skip
    statements = batch_statements(TABLE, [insert], T, now_us=NOW)
    where = 'WHERE "pk" = ? AND "ck1" = ? AND "ck2" = ?'
    assert statements == [
        Statement(f'UPDATE {Q} USING TIMESTAMP ? SET "tags" = ? {where}', (T, None, 1, 2, "a")),
        Statement(
            f'UPDATE {Q} USING TIMESTAMP ? SET "tags" = "tags" - ? {where}',
            (T, {"x"}, 1, 2, "a"),
        ),
    ]


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
    assert batch_statements(TABLE, [update], T, now_us=NOW) == [
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
    (statement,) = batch_statements(TABLE, [update], T, now_us=NOW)
    assert 'SET "attrs" = ?' in statement.cql and statement.values[1] == {"k": "v"}


def test_row_and_partition_deletes() -> None:
    assert batch_statements(TABLE, [row(Operation.ROW_DELETE, ck1=2, ck2="a")], T, now_us=NOW) == [
        Statement(
            f'DELETE FROM {Q} USING TIMESTAMP ? WHERE "pk" = ? AND "ck1" = ? AND "ck2" = ?',
            (T, 1, 2, "a"),
        )
    ]
    assert batch_statements(TABLE, [row(Operation.PARTITION_DELETE)], T, now_us=NOW) == [
        Statement(f'DELETE FROM {Q} USING TIMESTAMP ? WHERE "pk" = ?', (T, 1))
    ]


def test_a_range_delete_is_its_two_bound_rows() -> None:
    start = row(Operation.RANGE_DELETE_START_EXCLUSIVE, ck1=2, ck2=None)
    end = row(Operation.RANGE_DELETE_END_INCLUSIVE, ck1=5, ck2="z")
    assert batch_statements(TABLE, [start, end], T, now_us=NOW) == [
        Statement(
            f'DELETE FROM {Q} USING TIMESTAMP ? WHERE "pk" = ? AND ("ck1") > (?) '
            'AND ("ck1", "ck2") <= (?, ?)',
            (T, 1, 2, 5, "z"),
        )
    ]
    open_start = row(Operation.RANGE_DELETE_START_INCLUSIVE)
    (statement,) = batch_statements(TABLE, [open_start, end], T, now_us=NOW)
    assert ">" not in statement.cql and statement.values == (T, 1, 5, "z")


def test_images_are_not_changes_and_unpaired_bounds_are_refused() -> None:
    images = [row(Operation.PRE_IMAGE, ck1=1, ck2="a"), row(Operation.POST_IMAGE, ck1=1, ck2="a")]
    assert batch_statements(TABLE, images, T, now_us=NOW) == []
    with pytest.raises(ReplayError, match="start bound without its end"):
        batch_statements(TABLE, [row(Operation.RANGE_DELETE_START_INCLUSIVE, ck1=1)], T, now_us=NOW)
    with pytest.raises(ReplayError, match="end bound without its start"):
        batch_statements(TABLE, [row(Operation.RANGE_DELETE_END_EXCLUSIVE, ck1=1)], T, now_us=NOW)


def test_a_change_without_its_key_is_refused_by_name() -> None:
    with pytest.raises(ReplayError, match=r"shop\.orders: key column\(s\) ck2 missing"):
        batch_statements(TABLE, [row(Operation.ROW_DELETE, ck1=1)], T, now_us=NOW)


def test_names_are_quoted() -> None:
    odd = TableShape('k"s', "t", ("Key",), (), {"select": ColumnKind.ATOMIC})
    (statement,) = batch_statements(
        odd, [{"cdc$operation": 1, "Key": 1, "select": 2}], T, now_us=NOW
    )
    assert statement.cql == 'UPDATE "k""s"."t" USING TIMESTAMP ? SET "select" = ? WHERE "Key" = ?'


def test_a_static_row_is_written_by_partition_key_without_a_marker() -> None:
    for operation in (Operation.UPDATE, Operation.INSERT):
        static = row(operation, note="n")
        assert batch_statements(TABLE, [static], T, now_us=NOW) == [
            Statement(f'UPDATE {Q} USING TIMESTAMP ? SET "note" = ? WHERE "pk" = ?', (T, "n", 1))
        ]
    with pytest.raises(ReplayError, match="a static row's change sets column"):
        batch_statements(TABLE, [row(Operation.UPDATE, note="n", qty=1)], T, now_us=NOW)
    with pytest.raises(ReplayError, match="a clustering row's change sets column"):
        batch_statements(TABLE, [row(Operation.UPDATE, ck1=1, ck2="a", note="n")], T, now_us=NOW)


def test_a_udt_is_replayed_field_by_field_or_overwritten_whole() -> None:
    where = '"pk" = ? AND "ck1" = ? AND "ck2" = ?'
    fields = row(
        Operation.UPDATE, ck1=1, ck2="a", home=("Elm", None), **{"cdc$deleted_elements_home": {1}}
    )
    assert batch_statements(TABLE, [fields], T, now_us=NOW) == [
        Statement(f'UPDATE {Q} USING TIMESTAMP ? SET "home"."street" = ? WHERE {where}',
                  (T, "Elm", 1, 1, "a")),
        Statement(f'UPDATE {Q} USING TIMESTAMP ? SET "home"."zip" = ? WHERE {where}',
                  (T, None, 1, 1, "a")),
    ]  # fmt: skip
    whole = row(Operation.UPDATE, ck1=1, ck2="a", home=("Oak", 7), **{"cdc$deleted_home": True})
    (statement,) = batch_statements(TABLE, [whole], T, now_us=NOW)
    assert 'SET "home" = ?' in statement.cql and statement.values[1] == ("Oak", 7)
    beyond = row(Operation.UPDATE, ck1=1, ck2="a", **{"cdc$deleted_elements_home": {2}})
    with pytest.raises(ReplayError, match="field index 2"):
        batch_statements(TABLE, [beyond], T, now_us=NOW)


def test_the_copy_keeps_each_cell_time_and_writes_statics_by_partition() -> None:
    layout = CopyLayout(TABLE)
    assert layout.select_cql(TableRef("shop", "orders")).startswith(
        'SELECT "pk", "ck1", "ck2", "qty", WRITETIME("qty"), TTL("qty"), "note", '
        'WRITETIME("note"), TTL("note"), "tags", "attrs", "home" FROM "shop"."orders" '
    )
    keys = '"pk" = ? AND "ck1" = ? AND "ck2" = ?'
    selected = (1, 2, "a", 5, T - 7, 30, "n", T - 9, None, {"x"}, None, ("Elm", None))
    assert layout.statements(selected, T) == [
        Statement(f'INSERT INTO {Q} ("pk", "ck1", "ck2") VALUES (?, ?, ?) USING TIMESTAMP ?',
                  (1, 2, "a", T - 1)),
        Statement(f'UPDATE {Q} USING TIMESTAMP ? AND TTL ? SET "qty" = ? WHERE {keys}',
                  (T - 7, 30, 5, 1, 2, "a")),
        Statement(f'UPDATE {Q} USING TIMESTAMP ? SET "note" = ? WHERE "pk" = ?', (T - 9, "n", 1)),
        Statement(f'UPDATE {Q} USING TIMESTAMP ? SET "tags" = "tags" + ? WHERE {keys}',
                  (T - 1, {"x"}, 1, 2, "a")),
        Statement(f'UPDATE {Q} USING TIMESTAMP ? SET "home"."street" = ? WHERE {keys}',
                  (T - 1, "Elm", 1, 2, "a")),
    ]  # fmt: skip
    static_only = (1, None, None, None, None, None, "n", T - 9, None, None, None, None)
    assert layout.statements(static_only, T) == [
        Statement(f'UPDATE {Q} USING TIMESTAMP ? SET "note" = ? WHERE "pk" = ?', (T - 9, "n", 1))
    ]


def test_range_bounds_logged_in_clustering_order_replay_by_value() -> None:
    """ScyllaDB logs a range tombstone's start first in clustering order: on a DESC
    column that is the larger value, which CQL's value-order relations turn around."""
    desc = TableShape("shop", "events", ("pk",), ("ts", "seq"), {}, descending=frozenset({"ts"}))
    q = '"shop"."events"'
    # DELETE ... WHERE pk = 1 AND ts > 3 AND ts <= 5: from 5 (inclusive) down to 3.
    start = row(Operation.RANGE_DELETE_START_INCLUSIVE, ts=5)
    end = row(Operation.RANGE_DELETE_END_EXCLUSIVE, ts=3)
    assert batch_statements(desc, [start, end], T, now_us=NOW) == [
        Statement(
            f'DELETE FROM {q} USING TIMESTAMP ? WHERE "pk" = ? AND "ts" <= ? AND "ts" > ?',
            (T, 1, 5, 3),
        )
    ]
    # DELETE ... WHERE pk = 1 AND ts = 9 AND seq > 2 (seq ascending): the shared prefix.
    start = row(Operation.RANGE_DELETE_START_EXCLUSIVE, ts=9, seq=2)
    end = row(Operation.RANGE_DELETE_END_INCLUSIVE, ts=9)
    (statement,) = batch_statements(desc, [start, end], T, now_us=NOW)
    assert statement.cql.endswith('WHERE "pk" = ? AND "ts" = ? AND "seq" > ?')
    assert statement.values == (T, 1, 9, 2)
    # A tuple bound over columns of both orders has no value-order form: refused by name.
    start = row(Operation.RANGE_DELETE_START_INCLUSIVE, ts=5, seq=1)
    with pytest.raises(ReplayError, match=r"clustering columns of both orders \(ts, seq\)"):
        batch_statements(desc, [start, row(Operation.RANGE_DELETE_END_INCLUSIVE)], T, now_us=NOW)
