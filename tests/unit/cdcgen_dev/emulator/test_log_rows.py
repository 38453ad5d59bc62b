"""Every column shape the emulator logs, against what ScyllaDB logs (pure).

The rules come from ScyllaDB's ``cdc/log.cc`` (``add_columns_to_cdc_log``,
``process_row_visitor``, ``static_row_cells``), ``cdc/split.cc`` (TTL splitting, the
static row as its own change) and its tests (``test_udt_logging``, ``test_list_logging``
in ``test/boost/cdc_test.cc``, ``test/cql/cdc_static_and_clustered_rows_test.result``).
Each test states the exact log rows.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest

from cdcgen.core.cdc_log import micros_of_timeuuid
from cdcgen_dev.emulator.base_writes import LIST_APPEND_LIMIT
from cdcgen_dev.emulator.cql_types import NATIVE_TYPES
from cdcgen_dev.emulator.log_rows import (
    RANGE_DELETE,
    BaseRowChange,
    BaseWrite,
    Operation,
    base_statements,
    list_cell_key,
    log_row_values,
)
from cdcgen_dev.emulator.log_schema import (
    EVERY_NATIVE_TYPE,
    BaseTableSpec,
    Column,
    ColumnType,
    Field,
    InvalidTableSpec,
    UserType,
    base_table_cql,
    every_shape_table,
    log_columns,
    user_type_cql,
)
from cdcgen_dev.emulator.state import EmulatorError
from cdcgen_dev.emulator.tables import spec_from_json, spec_to_json
from cdcgen_dev.emulator.workload import DEFAULT_MIX
from cdcgen_dev.emulator.writes import EVERY_SHAPE_CHANGES, WriteFactory, change_shapes

SEQ, OP, TTL, END = '"cdc$batch_seq_no"', '"cdc$operation"', '"cdc$ttl"', '"cdc$end_of_batch"'
TS = 1_795_391_999_999_000  # a write timestamp (microseconds)

POINT = UserType("point", (Field("x", "int"), Field("y", "text"), Field("z", "int")))


def deleted(name: str) -> str:
    return f'"cdc$deleted_{name}"'


def elements(name: str) -> str:
    return f'"cdc$deleted_elements_{name}"'


def shapes() -> BaseTableSpec:
    """Static text and set, non-frozen list, map and user type, frozen ones, a tuple."""
    return BaseTableSpec(
        "ks",
        "t",
        (Column("pk", "int"),),
        (Column("ck", "int"),),
        (
            Column("s", "text", static=True),
            Column("ss", "set<text>", static=True),
            Column("v", "int"),
            Column("l", "list<text>"),
            Column("m", "map<text, int>"),
            Column("u", "point"),
            Column("fu", "frozen<point>"),
            Column("fl", "frozen<list<frozen<set<int>>>>"),
            Column("tp", "tuple<int, text>"),
        ),
        user_types=(POINT,),
    )


def rows_of(write: BaseWrite, spec: BaseTableSpec | None = None) -> list[dict[str, Any]]:
    """The log rows without the partition key and the batch bookkeeping."""
    rows = log_row_values(spec or shapes(), write)
    assert [r[SEQ] for r in rows] == list(range(len(rows)))
    assert all(END not in r for r in rows[:-1]) and rows[-1][END] is True
    return [{k: v for k, v in r.items() if k not in (SEQ, END, "pk")} for r in rows]


def update(*rows: BaseRowChange, static: BaseRowChange | None = None, ttl: int | None = None):
    return BaseWrite(Operation.UPDATE, (5,), rows, TS, ttl, static=static)


def insert(*rows: BaseRowChange, static: BaseRowChange | None = None, ttl: int | None = None):
    return BaseWrite(Operation.INSERT, (5,), rows, TS, ttl, static=static)


# --- types and the log schema ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cql", "log", "deleted_elements"),
    [
        ("duration", "duration", "duration", None),
        ("tuple<int, text>", "frozen<tuple<int, text>>", "frozen<tuple<int, text>>", None),
        ("frozen<tuple<int,text>>", "frozen<tuple<int, text>>", "frozen<tuple<int, text>>", None),
        ("point", "point", "frozen<point>", "frozen<set<smallint>>"),
        ("frozen<point>", "frozen<point>", "frozen<point>", None),
        (
            "list<frozen<tuple<int, text>>>",
            "list<frozen<tuple<int, text>>>",
            "frozen<map<timeuuid, frozen<tuple<int, text>>>>",
            "frozen<set<timeuuid>>",
        ),
        (
            "map<frozen<point>, frozen<list<int>>>",
            "map<frozen<point>, frozen<list<int>>>",
            "frozen<map<frozen<point>, frozen<list<int>>>>",
            "frozen<set<frozen<point>>>",
        ),
        ("set<frozen<set<int>>>", "set<frozen<set<int>>>", "frozen<set<frozen<set<int>>>>",
         "frozen<set<frozen<set<int>>>>"),
        ("frozen<list<frozen<point>>>", "frozen<list<frozen<point>>>",
         "frozen<list<frozen<point>>>", None),
    ],
)  # fmt: skip
def test_log_types_follow_add_columns_to_cdc_log(
    text: str, cql: str, log: str, deleted_elements: str | None
) -> None:
    """A non-frozen column is frozen in the log (a list as a map keyed by time UUIDs);
    its deleted elements are a frozen set of its keys, or of a user type's field indices."""
    kind = ColumnType.parse(text)
    assert kind.cql() == cql
    assert kind.log_cql() == log
    assert kind.deleted_elements_cql() == deleted_elements
    assert ColumnType.parse(kind.cql()) == kind  # printing is parsing's inverse


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("counter", "counters"),
        ("set<list<int>>", "must be frozen"),
        ("map<text, point>", "must be frozen"),
        ("tuple<int, set<int>>", "must be frozen"),
        ("frozen<int>", "frozen<> takes"),
        ("set<duration>", "durations cannot"),
        ("map<frozen<tuple<int, duration>>, int>", "durations cannot"),
        ("list<int, int>", "takes 1"),
        ("int<text>", "no type parameters"),
        ("list<int", "unbalanced"),
        ("vector<float, 3>", "not supported"),
        ("frozen<vector<float, 3>>", "not supported"),
    ],
)
def test_types_that_cql_refuses_are_refused(text: str, message: str) -> None:
    with pytest.raises(InvalidTableSpec, match=message):
        ColumnType.parse(text)


def test_every_shape_table_log_schema() -> None:
    spec = every_shape_table("ks")
    assert {c.cql_type for c in spec.columns} >= NATIVE_TYPES == set(EVERY_NATIVE_TYPE)
    columns = log_columns(spec)
    names = [name for name, _ in columns]
    # Metadata, keys, then static columns before regular ones (add_columns_to_cdc_log).
    assert names[6:8] == ["pk", "ck"]
    assert names[8:16] == [
        "s_note", deleted("s_note"),
        "s_tags", deleted("s_tags"), elements("s_tags"),
        "s_home", deleted("s_home"), elements("s_home"),
    ]  # fmt: skip
    types = dict(columns)
    assert types["s_tags"] == "frozen<set<text>>" and types["s_home"] == "frozen<address>"
    assert types[elements("s_home")] == "frozen<set<smallint>>"
    assert types["nf_list"] == "frozen<map<timeuuid, frozen<tuple<int, text>>>>"
    assert types[elements("nf_list")] == "frozen<set<timeuuid>>"
    assert types["nf_map"] == "frozen<map<text, frozen<address>>>"
    assert types[elements("nf_map")] == "frozen<set<text>>"
    assert types["nf_udt"] == "frozen<address>"
    assert types[elements("nf_udt")] == "frozen<set<smallint>>"
    assert types["tup"] == "frozen<tuple<int, text, frozen<point>>>"
    assert types["n_duration"] == "duration" and types[deleted("n_duration")] == "boolean"
    # Frozen columns, tuples and natives have no deleted elements.
    for name in ("f_list", "f_set", "f_map", "f_udt", "tup", "n_blob", "s_note"):
        assert elements(name) not in types
    assert user_type_cql(spec) == [
        "CREATE TYPE IF NOT EXISTS ks.point (x double, y double)",
        "CREATE TYPE IF NOT EXISTS ks.address (street text, number int, "
        "tags frozen<set<text>>, location frozen<point>)",
    ]
    cql = base_table_cql(spec)
    assert "s_tags set<text> STATIC, s_home address STATIC" in cql
    assert "nf_udt address, " in cql and "tup frozen<tuple<int, text, frozen<point>>>" in cql


def test_spec_json_round_trip_keeps_statics_and_user_types() -> None:
    spec = every_shape_table("ks", cdc_ttl=600)
    assert spec_from_json(spec_to_json(spec)) == spec
    # A record written before static columns and user types existed still loads.
    old = json.loads(spec_to_json(BaseTableSpec("ks", "t", (Column("pk", "int"),))))
    del old["user_types"]
    for column in old["partition_key"]:
        del column["static"]
    assert spec_from_json(json.dumps(old)) == BaseTableSpec("ks", "t", (Column("pk", "int"),))


def spec_with(*columns: Column, keys: tuple[Column, ...] = (), types=(POINT,)) -> BaseTableSpec:
    clustering = keys or (Column("ck", "int"),)
    return BaseTableSpec("ks", "t", (Column("pk", "int"),), clustering, columns, user_types=types)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: spec_with(Column("a", "address")), "not declared"),
        (
            lambda: spec_with(types=(UserType("a", (Field("p", "frozen<point>"),)), POINT)),
            "before it",
        ),
        (lambda: spec_with(types=(UserType("a", (Field("s", "set<int>"),)),)), "must be frozen"),
        (lambda: spec_with(keys=(Column("ck", "frozen<tuple<int, duration>>"),)), "duration"),
        (lambda: spec_with(keys=(Column("ck", "point"),)), "non-frozen"),
        (lambda: spec_with(keys=(Column("ck", "int", static=True),)), "cannot be static"),
        (
            lambda: BaseTableSpec(
                "ks", "t", (Column("pk", "int"),), (), (Column("s", "int", static=True),)
            ),
            "need a clustering key",
        ),
        (
            lambda: spec_with(
                Column("x", "set<frozen<d>>"), types=(UserType("d", (Field("t", "duration"),)),)
            ),
            "durations cannot",
        ),
        (lambda: UserType("int", (Field("x", "int"),)), "reserved"),
        (lambda: UserType("p", (Field("x", "int"), Field("x", "text"))), "duplicate"),
    ],
)  # fmt: skip
def test_specs_that_cql_refuses_are_refused(build: Any, message: str) -> None:
    with pytest.raises(InvalidTableSpec, match=message):
        build()


# --- static rows -------------------------------------------------------------------------


def test_static_row_is_logged_first_as_an_update() -> None:
    """cdc_static_and_clustered_rows_test: ``update ks.t set vs = 2, vc = 2 where pk = 0
    and ck = 0`` logs the static row (ck null) then the clustering row, both op 1."""
    write = update(BaseRowChange((1,), {"v": 2}), static=BaseRowChange((), {"s": "a"}))
    assert rows_of(write) == [{OP: 1, "s": "a"}, {OP: 1, "ck": 1, "v": 2}]
    assert base_statements(shapes(), write) == [
        ("UPDATE ks.t USING TIMESTAMP ? SET s = ? WHERE pk = ?", [TS, "a", 5]),
        ("UPDATE ks.t USING TIMESTAMP ? SET v = ? WHERE pk = ? AND ck = ?", [TS, 2, 5, 1]),
    ]
    # An UPDATE with only the partition key: the static row alone.
    only = update(static=BaseRowChange((), {"s": None, "ss": {"x"}}))
    assert rows_of(only) == [{OP: 1, deleted("s"): True, "ss": {"x"}}]
    assert base_statements(shapes(), only)[0][0] == (
        "UPDATE ks.t USING TIMESTAMP ? SET s = null, ss = ss + ? WHERE pk = ?"
    )


def test_insert_logs_its_static_row_as_an_update() -> None:
    """``static_row_cells`` allocates its row with ``operation::update``: a static row has
    no row marker, so even an INSERT's static row is an UPDATE; the clustering row is
    the INSERT. An INSERT of only the partition key and static columns is one UPDATE."""
    write = insert(BaseRowChange((1,), {"v": 2}), static=BaseRowChange((), {"ss": {"x"}}))
    assert rows_of(write) == [
        {OP: 1, deleted("ss"): True, "ss": {"x"}},  # an INSERT overwrites: a tombstone
        {OP: 2, "ck": 1, "v": 2},
    ]
    only = insert(static=BaseRowChange((), {"s": "a"}))
    assert rows_of(only) == [{OP: 1, "s": "a"}]
    assert base_statements(shapes(), only) == [
        ("INSERT INTO ks.t (pk, s) VALUES (?, ?) USING TIMESTAMP ?", [5, "a", TS])
    ]


def test_static_row_with_a_ttl_splits_like_any_row() -> None:
    """The static row's dead part (tombstones, no TTL), then its live part (TTL), then the
    INSERT rows, then their non-atomic parts (cdc/split.cc: static updates come first)."""
    write = insert(
        BaseRowChange((1,), {"v": 2, "l": ["a"]}),
        static=BaseRowChange((), {"s": "a", "ss": {"x"}}),
        ttl=30,
    )
    assert rows_of(write) == [
        {OP: 1, deleted("ss"): True},
        {OP: 1, TTL: 30, "s": "a", "ss": {"x"}},
        {OP: 2, TTL: 30, "ck": 1, "v": 2},
        {OP: 1, "ck": 1, deleted("l"): True},
        {OP: 1, TTL: 30, "ck": 1, "l": {list_cell_key(TS, 0): "a"}},
    ]


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (update(static=BaseRowChange((), {"v": 1})), "no data columns"),
        (update(BaseRowChange((1,), {"s": "a"})), "no data columns"),
        (update(static=BaseRowChange((1,), {"s": "a"})), "no clustering key"),
        (insert(static=BaseRowChange((), {})), "gives them values"),
        (update(), "changes a row or the static row"),
        (
            BaseWrite(
                Operation.ROW_DELETE, (5,), (BaseRowChange((1,)),), TS,
                static=BaseRowChange((), {"s": "a"}),
            ),
            "only an INSERT or an UPDATE",
        ),
    ],
)  # fmt: skip
def test_static_changes_that_cql_cannot_make_are_refused(write: BaseWrite, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        log_row_values(shapes(), write)


# --- non-frozen lists --------------------------------------------------------------------


def test_list_cells_are_keyed_by_the_writes_time() -> None:
    """ScyllaDB keys a write's appended cells with its timestamp plus a per-write
    sequence (``get_time_UUID_bytes_from_micros_and_submicros``): each key carries the
    write time, and they sort in the order appended."""
    keys = [list_cell_key(TS, n) for n in range(LIST_APPEND_LIMIT)]
    assert all(k.version == 1 and micros_of_timeuuid(k) == TS for k in keys)
    assert [k.time for k in keys] == list(range(keys[0].time, keys[0].time + 10))
    assert len(set(keys)) == LIST_APPEND_LIMIT
    with pytest.raises(ValueError, match="at most 10"):
        list_cell_key(TS, LIST_APPEND_LIMIT)


def test_list_append_overwrite_and_null() -> None:
    k = [list_cell_key(TS, n) for n in range(4)]
    append = update(BaseRowChange((1,), {"l": ["a", "b"]}), BaseRowChange((2,), {"l": ["c"]}))
    assert rows_of(append) == [
        {OP: 1, "ck": 1, "l": {k[0]: "a", k[1]: "b"}},
        {OP: 1, "ck": 2, "l": {k[2]: "c"}},  # the sequence runs over the whole write
    ]
    assert base_statements(shapes(), append)[0] == (
        "UPDATE ks.t USING TIMESTAMP ? SET l = l + ? WHERE pk = ? AND ck = ?",
        [TS, ["a", "b"], 5, 1],
    )
    overwrite = update(BaseRowChange((1,), {"l": ["a"]}, overwritten=frozenset({"l"})))
    assert rows_of(overwrite) == [{OP: 1, "ck": 1, deleted("l"): True, "l": {k[0]: "a"}}]
    assert "SET l = ? WHERE" in base_statements(shapes(), overwrite)[0][0]
    cleared = update(BaseRowChange((1,), {"l": None}))
    assert rows_of(cleared) == [{OP: 1, "ck": 1, deleted("l"): True}]
    emptied = update(BaseRowChange((1,), {"l": []}, overwritten=frozenset({"l"})))
    assert rows_of(emptied) == [{OP: 1, "ck": 1, deleted("l"): True}]


def test_list_removals_and_long_appends_are_refused() -> None:
    with pytest.raises(ValueError, match="cell keys"):
        log_row_values(shapes(), update(BaseRowChange((1,), removed={"l": ["a"]})))
    many = update(
        BaseRowChange((1,), {"l": list("abcdef")}), BaseRowChange((2,), {"l": list("ghijk")})
    )
    with pytest.raises(ValueError, match="11 list elements"):
        log_row_values(shapes(), many)


# --- non-frozen maps ---------------------------------------------------------------------


def test_map_add_remove_overwrite_and_null() -> None:
    spec = shapes()
    add = update(BaseRowChange((1,), {"m": {"a": 1}}))
    assert rows_of(add) == [{OP: 1, "ck": 1, "m": {"a": 1}}]
    assert "SET m = m + ? WHERE" in base_statements(spec, add)[0][0]
    remove = update(BaseRowChange((1,), removed={"m": {"a", "b"}}))
    assert rows_of(remove) == [{OP: 1, "ck": 1, elements("m"): {"a", "b"}}]
    assert base_statements(spec, remove)[0][1] == [TS, {"a", "b"}, 5, 1]
    overwrite = update(BaseRowChange((1,), {"m": {"a": 1}}, overwritten=frozenset({"m"})))
    assert rows_of(overwrite) == [{OP: 1, "ck": 1, deleted("m"): True, "m": {"a": 1}}]
    assert rows_of(update(BaseRowChange((1,), {"m": None}))) == [
        {OP: 1, "ck": 1, deleted("m"): True}
    ]


# --- non-frozen user types ---------------------------------------------------------------


def test_udt_overwrite_logs_a_tombstone_and_the_value() -> None:
    """test_udt_logging: ``set val = {field0: 12, field1: 'ko'}`` logs the value and the
    delete marker; a field the value leaves null stays null."""
    write = update(BaseRowChange((1,), {"u": (12, "ko", None)}))
    assert rows_of(write) == [{OP: 1, "ck": 1, deleted("u"): True, "u": (12, "ko", None)}]
    assert "SET u = ? WHERE" in base_statements(shapes(), write)[0][0]  # never u = u + ?


def test_udt_field_update_logs_the_type_with_only_that_field() -> None:
    """test_udt_logging: ``set val.field0 = 13`` logs ``{field0: 13, field1: null}``."""
    write = update(BaseRowChange((1,), fields={"u": {"y": "b"}}))
    assert rows_of(write) == [{OP: 1, "ck": 1, "u": (None, "b", None)}]
    assert base_statements(shapes(), write) == [
        ("UPDATE ks.t USING TIMESTAMP ? SET u.y = ? WHERE pk = ? AND ck = ?", [TS, "b", 5, 1])
    ]


def test_udt_field_set_to_null_logs_its_index_and_an_empty_value() -> None:
    """test_udt_logging: ``set val.field1 = null`` logs ``cdc$deleted_elements_val = {1}``
    and a value with every field null (``udt_visitor`` sizes its cells to all fields,
    so the value is never missing)."""
    write = update(BaseRowChange((1,), fields={"u": {"z": None}}))
    assert rows_of(write) == [{OP: 1, "ck": 1, elements("u"): {2}, "u": (None, None, None)}]
    assert "SET u.z = null WHERE" in base_statements(shapes(), write)[0][0]
    both = update(BaseRowChange((1,), fields={"u": {"x": 7, "y": None}}))
    assert rows_of(both) == [{OP: 1, "ck": 1, elements("u"): {1}, "u": (7, None, None)}]


def test_udt_set_to_null_logs_the_tombstone_and_an_empty_value() -> None:
    write = update(BaseRowChange((1,), {"u": None}))
    assert rows_of(write) == [{OP: 1, "ck": 1, deleted("u"): True, "u": (None, None, None)}]
    assert "SET u = null WHERE" in base_statements(shapes(), write)[0][0]


def test_udt_with_a_ttl_logs_the_empty_value_in_its_dead_part() -> None:
    """The dead part (a tombstone, a field set to null: no TTL) and the live part (the
    fields given values) are separate changes; each holds the type's value."""
    overwrite = update(BaseRowChange((1,), {"u": (1, None, 3)}), ttl=30)
    assert rows_of(overwrite) == [
        {OP: 1, "ck": 1, deleted("u"): True, "u": (None, None, None)},
        {OP: 1, TTL: 30, "ck": 1, "u": (1, None, 3)},
    ]
    fields = update(BaseRowChange((1,), fields={"u": {"x": 1, "y": None}}), ttl=30)
    assert rows_of(fields) == [
        {OP: 1, "ck": 1, elements("u"): {1}, "u": (None, None, None)},
        {OP: 1, TTL: 30, "ck": 1, "u": (1, None, None)},
    ]
    inserted = insert(BaseRowChange((1,), {"v": 1, "u": (1, "a", 2)}), ttl=30)
    assert rows_of(inserted) == [
        {OP: 2, TTL: 30, "ck": 1, "v": 1},
        {OP: 1, "ck": 1, deleted("u"): True, "u": (None, None, None)},
        {OP: 1, TTL: 30, "ck": 1, "u": (1, "a", 2)},
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (BaseRowChange((1,), fields={"fu": {"x": 1}}), "non-frozen user type"),
        (BaseRowChange((1,), fields={"u": {"w": 1}}), "no field 'w'"),
        (BaseRowChange((1,), fields={"u": {}}), "no field is no change"),
        (BaseRowChange((1,), {"u": (1, 2)}), "has 3 fields"),
        (BaseRowChange((1,), {"u": None}, fields={"u": {"x": 1}}), "one way per statement"),
        (BaseRowChange((1,), {"u": (1, "a", 2)}, overwritten=frozenset({"u"})), "collection"),
    ],
)
def test_udt_changes_that_cql_cannot_make_are_refused(change: BaseRowChange, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        log_row_values(shapes(), update(change))


# --- frozen types and tuples are atomic --------------------------------------------------


def test_frozen_types_and_tuples_are_atomic_cells() -> None:
    values = {"fu": (1, "a", None), "fl": [{1, 2}, {3}], "tp": (4, "b")}
    write = update(BaseRowChange((1,), values), ttl=30)
    assert rows_of(write) == [{OP: 1, TTL: 30, "ck": 1, **values}]  # one live row
    assert base_statements(shapes(), write)[0] == (
        "UPDATE ks.t USING TIMESTAMP ? AND TTL ? SET fu = ?, fl = ?, tp = ? "
        "WHERE pk = ? AND ck = ?",
        [TS, 30, (1, "a", None), [{1, 2}, {3}], (4, "b"), 5, 1],
    )
    nulls = update(BaseRowChange((1,), dict.fromkeys(values)), ttl=30)
    assert rows_of(nulls) == [{OP: 1, "ck": 1, **{deleted(n): True for n in values}}]
    with pytest.raises(ValueError, match="overwrites"):
        log_row_values(shapes(), update(BaseRowChange((1,), values, overwritten=frozenset({"fl"}))))


# --- the random writes of the every-shape table ------------------------------------------


def every_shape_writes(seed: int, count: int = 300) -> list[BaseWrite]:
    spec = every_shape_table("ks")
    mix = {**DEFAULT_MIX, RANGE_DELETE: 0.1}
    writes = []
    for ttl in (None, 60):
        factory = WriteFactory(spec, random.Random(seed), mix, keys=30, base_ttl=ttl)
        writes += [factory.make(TS + n) for n in range(count)]
    return writes


def test_random_writes_make_every_shape_and_fit_the_log() -> None:
    spec = every_shape_table("ks")
    writes = every_shape_writes(seed=8)
    assert [repr(w) for w in writes] == [repr(w) for w in every_shape_writes(seed=8)]
    made = Counter(shape for w in writes for shape in change_shapes(spec, w))
    assert set(made) >= EVERY_SHAPE_CHANGES, EVERY_SHAPE_CHANGES - set(made)
    names = {name for name, _ in log_columns(spec)}
    ops = set()
    address = len(spec.user_type("address").fields)
    for write in writes:
        base_statements(spec, write)  # every write is expressible
        for row in log_row_values(spec, write):
            assert set(row) <= names
            ops.add(row[OP])
            assert all(len(row[c]) == address for c in ("nf_udt", "s_home") if c in row)
            if "nf_list" in row:
                assert all(micros_of_timeuuid(k) == write.timestamp_us for k in row["nf_list"])
    assert ops == set(range(1, 9))
    assert any(
        len(row["n_blob"]) >= 1024
        for w in writes
        for row in log_row_values(spec, w)
        if "n_blob" in row
    )


def test_a_factory_that_could_break_the_list_limit_is_refused() -> None:
    spec = BaseTableSpec(
        "ks", "t", (Column("pk", "int"),), (Column("ck", "int"),),
        (Column("a", "list<int>"), Column("b", "list<int>")),
    )  # fmt: skip
    with pytest.raises(EmulatorError, match="list elements"):
        WriteFactory(spec, random.Random(1), DEFAULT_MIX, keys=5)
    WriteFactory(spec, random.Random(1), DEFAULT_MIX, keys=5, max_rows_per_write=1)
