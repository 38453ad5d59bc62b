"""A partition folded from its mutations reads as the database would return it."""

from __future__ import annotations

import math
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cdcgen.core.mirror_fold import Fold, MirrorRow, PartitionCells
from cdcgen.core.operations.mutations import (
    AddElements,
    Bound,
    Mutation,
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

TABLE = TableShape(
    "ks",
    "t",
    ("pk",),
    ("ck",),
    {
        "v": ColumnKind.ATOMIC,
        "tags": ColumnKind.SET,
        "props": ColumnKind.MAP,
        "addr": ColumnKind.UDT,
        "items": ColumnKind.LIST,
        "s": ColumnKind.ATOMIC,
    },
    frozenset({"s"}),
    {"addr": ("street", "zip")},
)
DESCENDING = TableShape(
    "ks", "d", ("pk",), ("a", "b"), {"v": ColumnKind.ATOMIC}, descending=frozenset({"a"})
)
T = 1_700_000_000_000_000
NOW = T // 1_000_000 + 1


def serialized(column: str, key: Any, value: Any) -> bytes:
    if isinstance(value, int):
        return value.to_bytes(8, "big", signed=True)
    return str(value).encode()


def natural(column: str, value: Any) -> Any:
    return value


def fold(mutations: list[Mutation], table: TableShape = TABLE) -> tuple[Fold, PartitionCells]:
    folding = Fold(table, serialized, natural)
    partition = PartitionCells()
    for mutation in mutations:
        folding.apply(partition, mutation)
    return folding, partition


def read(mutations: list[Mutation], now_s: int = NOW, table: TableShape = TABLE
         ) -> list[MirrorRow]:  # fmt: skip
    folding, partition = fold(mutations, table)
    return list(folding.rows((1,), partition, now_s))


def insert(ck: int, at: int, ttl: int | None = None, **cells: Any) -> RowWrite:
    changes = tuple(
        SetValue(c, v) if TABLE.columns[c] is ColumnKind.ATOMIC else Overwrite(c, v)
        for c, v in cells.items()
    )
    return RowWrite((1, ck), False, True, T + at, ttl, changes)


def update(ck: int | None, at: int, *cells: Any, ttl: int | None = None) -> RowWrite:
    key = (1,) if ck is None else (1, ck)
    return RowWrite(key, ck is None, False, T + at, ttl, tuple(cells))


def values(rows: list[MirrorRow]) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {r.key: {c: v for c, v in r.values.items() if v is not None} for r in rows}


def test_an_insert_s_row_lives_through_its_marker_and_an_update_s_through_its_cells() -> None:
    inserted = [insert(1, 0, v=5), update(1, 1, SetValue("v", None))]
    assert values(read(inserted)) == {(1, 1): {}}
    updated = [update(2, 0, SetValue("v", 5)), update(2, 1, SetValue("v", None))]
    assert read(updated) == []


def test_each_cell_keeps_its_own_latest_write() -> None:
    rows = read([update(1, 5, SetValue("v", 1)), insert(1, 3, v=2, tags=["a"])])
    assert values(rows) == {(1, 1): {"v": 1, "tags": ["a"]}}
    assert rows[0].write_times == {"v": T + 5}


def test_an_overwrite_replaces_older_elements_and_an_add_keeps_them() -> None:
    added = [update(1, 0, AddElements("tags", ["a"])), update(1, 1, AddElements("tags", ["b"]))]
    assert values(read(added))[(1, 1)]["tags"] == ["a", "b"]
    replaced = [*added, update(1, 2, Overwrite("tags", ["c"]))]
    assert values(read(replaced))[(1, 1)]["tags"] == ["c"]
    late_add = [*replaced, update(1, 1, AddElements("tags", ["z"]))]  # older than it: gone
    assert values(read(late_add))[(1, 1)]["tags"] == ["c"]


def test_removed_elements_and_null_fields_are_gone_and_newer_ones_stay() -> None:
    rows = read(
        [
            update(1, 0, AddElements("props", [("k", "x"), ("j", "y")])),
            update(1, 1, RemoveElements("props", {"k"})),
            update(1, 2, SetFields("addr", (("street", "Main"), ("zip", "1")))),
            update(1, 3, NullFields("addr", ("zip",))),
            update(1, 0, RemoveElements("props", {"j"})),  # at the add's own time: wins
        ]
    )
    assert values(rows)[(1, 1)] == {"addr": ("Main", None)}


def test_a_list_reads_as_its_values_in_the_order_of_their_cells_keys() -> None:
    # the log keys a list's cells by time UUID (here: numbers in the same order)
    appended = [
        update(1, 0, AddElements("items", {20: "b"})),
        update(1, 1, AddElements("items", {10: "a", 30: "c"})),
        update(1, 2, RemoveElements("items", {20})),
    ]
    assert values(read(appended))[(1, 1)]["items"] == ["a", "c"]
    replaced = [*appended, update(1, 3, Overwrite("items", {40: "d"}))]
    assert values(read(replaced))[(1, 1)]["items"] == ["d"]


def test_a_range_delete_covers_only_older_rows_inside_its_bounds() -> None:
    writes = [update(ck, 0, SetValue("v", ck)) for ck in range(1, 6)]
    delete = RangeDelete((1,), Bound((2,), True), Bound((4,), False), T + 1)
    rows = read([*writes, delete, update(3, 2, SetValue("v", 33))])
    assert values(rows) == {(1, 1): {"v": 1}, (1, 3): {"v": 33}, (1, 4): {"v": 4}, (1, 5): {"v": 5}}


def test_a_range_on_a_descending_column_starts_at_its_larger_value() -> None:
    rows = [
        RowWrite((1, a, b), False, False, T, None, (SetValue("v", 0),))
        for a in (1, 2, 3)
        for b in (1, 2)
    ]
    delete = RangeDelete((1,), Bound((3,), False), Bound((2, 1), True), T + 1)
    left = read([*rows, delete], table=DESCENDING)
    assert [r.key for r in left] == [(1, 3, 1), (1, 3, 2), (1, 2, 2), (1, 1, 1), (1, 1, 2)]


def test_a_partition_delete_outlives_the_older_writes_folded_after_it() -> None:
    rows = read(
        [
            update(1, 0, SetValue("v", 1)),
            update(None, 0, SetValue("s", 7)),
            PartitionDelete((1,), T + 5),
            update(2, 4, SetValue("v", 2)),  # older: deleted
            update(3, 6, SetValue("v", 3)),
        ]
    )
    assert values(rows) == {(1, 3): {"v": 3}}


def test_a_row_delete_and_the_static_row() -> None:
    rows = read(
        [
            insert(1, 0, v=1),
            update(None, 0, SetValue("s", 7)),
            RowDelete((1, 1), T + 1),
        ]
    )
    assert values(rows) == {(1,): {"s": 7}}
    assert rows[0].static


def test_an_older_tombstone_folded_after_a_newer_one_changes_nothing() -> None:
    for delete in (RowDelete((1, 1), T + 2), PartitionDelete((1,), T + 2)):
        newer = type(delete)(delete.key, T + 5)
        assert read([newer, delete, update(1, 3, SetValue("v", 1))]) == []


def test_cells_expire_at_their_ttl_and_the_marker_with_them() -> None:
    mutations = [insert(1, 0, ttl=10, v=1), update(1, 0, SetValue("s", None))]
    assert values(read(mutations, now_s=NOW + 8)) == {(1, 1): {"v": 1}}
    assert read(mutations, now_s=NOW + 9) == []


def float_order(column: str, value: Any) -> Any:
    """As ScyllaDB compares floats: every NaN alike, -0 before 0."""
    return (1, 0.0, 0.0) if math.isnan(value) else (0, value, math.copysign(1.0, value))


def test_keys_are_told_apart_as_the_type_s_order_tells_them() -> None:
    table = TableShape("ks", "f", ("pk",), ("x",), {"fs": ColumnKind.SET, "v": ColumnKind.ATOMIC})
    folding = Fold(table, serialized, float_order)
    partition = PartitionCells()
    for mutation in [
        RowWrite((1, -0.0), False, False, T, None, (SetValue("v", 1),)),
        RowWrite((1, 0.0), False, False, T + 1, None, (SetValue("v", 2),)),
        RowWrite((1, math.nan), False, False, T, None, (AddElements("fs", [math.nan, 1.0]),)),
        RowWrite((1, float("nan")), False, False, T + 1, None, (RemoveElements("fs", {math.nan}),)),
    ]:
        folding.apply(partition, mutation)
    rows = list(folding.rows((1,), partition, NOW))
    assert [(r.key[1], r.values["v"]) for r in rows[:2]] == [(-0.0, 1), (0.0, 2)]
    assert math.copysign(1.0, rows[0].key[1]) == -1.0
    assert len(rows) == 3 and rows[2].values["fs"] == [1.0]  # one NaN row, its NaN removed


# -- folded in any order, or twice: the same rows ---------------------------------------

times = st.integers(0, 6)
cks = st.integers(1, 2)
small = st.integers(-2, 2)
cell_changes = st.one_of(
    st.builds(SetValue, st.just("v"), st.one_of(st.none(), small)),
    st.builds(Overwrite, st.just("tags"), st.lists(small, max_size=2, unique=True)),
    st.builds(AddElements, st.just("tags"), st.lists(small, min_size=1, max_size=2, unique=True)),
    st.builds(RemoveElements, st.just("tags"), st.sets(small, min_size=1, max_size=2)),
)


@st.composite
def mutations(draw: st.DrawFn) -> Mutation:
    kind = draw(st.sampled_from(["write", "write", "write", "row", "partition", "range"]))
    at = T + draw(times)
    if kind == "write":
        ck = draw(cks)
        marker = draw(st.booleans())
        ttl = draw(st.sampled_from([None, None, 3, 5]))
        cells = tuple(draw(st.lists(cell_changes, min_size=1, max_size=3, unique_by=_column)))
        if marker:
            cells = tuple(c for c in cells if isinstance(c, SetValue | Overwrite))
        return RowWrite((1, ck), False, marker, at, ttl, cells)
    if kind == "row":
        return RowDelete((1, draw(cks)), at)
    if kind == "partition":
        return PartitionDelete((1,), at)
    low, high = sorted(draw(st.lists(cks, min_size=2, max_size=2)))
    return RangeDelete((1,), Bound((low,), draw(st.booleans())), Bound((high,), True), at)


def _column(change: Any) -> str:
    return str(change.column)


@settings(max_examples=300, deadline=None)
@given(st.lists(mutations(), max_size=8), st.randoms(use_true_random=False), st.integers(0, 8))
def test_any_order_and_any_repeat_read_the_same(
    changes: list[Mutation], shuffle: random.Random, later: int
) -> None:
    expected = read(changes, now_s=NOW + later)
    shuffled = list(changes)
    shuffle.shuffle(shuffled)
    assert read(shuffled, now_s=NOW + later) == expected
    assert read(changes + shuffled, now_s=NOW + later) == expected
