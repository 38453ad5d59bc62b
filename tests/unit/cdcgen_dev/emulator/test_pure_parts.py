"""Pure parts of the sandbox emulator: faults, log schema, tokens, time UUIDs, routing."""

from __future__ import annotations

import random
import struct
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from cassandra.util import unix_time_from_uuid1

from cdcgen.core.cdc_log import micros_of_timeuuid, timeuuid_from_micros
from cdcgen.core.errors import (
    InvalidStreamId,
    NoGenerationForWrite,
    WriteFromTheFuture,
    WriteFromThePast,
)
from cdcgen.core.stream_id import StreamId
from cdcgen.core.tablets import TabletStreamSet
from cdcgen.core.time import from_micros, to_micros
from cdcgen.core.timeline import GenerationTimeline
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN
from cdcgen.core.topology import Node, make_generation
from cdcgen_dev.emulator import partition
from cdcgen_dev.emulator.faults import (
    FaultError,
    FaultKind,
    GenerationFault,
    apply_row_faults,
    commits,
    rows_to_write,
    with_bad_version,
)
from cdcgen_dev.emulator.log_rows import (
    RANGE_DELETE,
    BaseRowChange,
    BaseWrite,
    ClusteringRange,
    Operation,
    RangeBound,
    base_statements,
    log_insert_cql,
    log_insert_params,
    log_row_values,
    operation_label,
)
from cdcgen_dev.emulator.log_schema import (
    BaseTableSpec,
    Column,
    ColumnType,
    InvalidTableSpec,
    log_columns,
    log_table_cql,
    orders_table,
    twcs_window_minutes,
)
from cdcgen_dev.emulator.raw import description_from_raw, raw_from_description
from cdcgen_dev.emulator.routing import TabletRouter, VnodeRouter
from cdcgen_dev.emulator.state import EmulatorError
from cdcgen_dev.emulator.tablet_map import (
    InvalidTabletCount,
    new_tablet_streams,
    resize_timestamp,
    tablet_last_tokens,
)
from cdcgen_dev.emulator.workload import DEFAULT_MIX, WorkloadSpec
from cdcgen_dev.emulator.writes import WriteFactory

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def generation(seed: int = 1, nodes: int = 2, shards: int = 3):
    rng = random.Random(seed)
    members = [
        Node(f"n{i}", shards, 12, tuple(rng.randint(MIN_TOKEN + 1, MAX_TOKEN) for _ in range(4)))
        for i in range(nodes)
    ]
    return make_generation(members, rng)


# --- faults --------------------------------------------------------------------------------


def test_fault_parse_and_str() -> None:
    fault = GenerationFault.parse("ring-gap:3")
    assert fault == GenerationFault(FaultKind.RING_GAP, 3)
    assert str(fault) == "ring-gap:3"
    assert GenerationFault.parse("bad-version").entry == 0
    with pytest.raises(FaultError, match="unknown fault"):
        GenerationFault.parse("nope")
    with pytest.raises(FaultError, match="not an integer"):
        GenerationFault.parse("ring-gap:x")


def test_row_faults_change_exactly_one_thing() -> None:
    raw = raw_from_description(generation())
    missing = apply_row_faults(raw, [GenerationFault(FaultKind.MISSING_STREAM, 2)])
    assert len(missing[2].streams) == len(raw[2].streams) - 1
    assert missing[:2] == raw[:2] and missing[3:] == raw[3:]

    duplicated = apply_row_faults(raw, [GenerationFault(FaultKind.DUPLICATE_STREAM, 1)])
    assert duplicated[2].streams[0] == raw[1].streams[0]
    assert duplicated[2].streams[1:] == raw[2].streams[1:]

    gap = apply_row_faults(raw, [GenerationFault(FaultKind.RING_GAP, 0)])
    assert gap == raw[1:]

    bad = apply_row_faults(raw, [GenerationFault(FaultKind.BAD_VERSION, 4)])
    with pytest.raises(InvalidStreamId, match="version 2"):
        StreamId(bad[4].streams[0])
    with pytest.raises(InvalidStreamId):
        description_from_raw(bad)

    with pytest.raises(FaultError, match="only"):
        apply_row_faults(raw, [GenerationFault(FaultKind.RING_GAP, 99)])


def test_with_bad_version_keeps_other_bits() -> None:
    stream = StreamId.from_parts(12345, 7, 99)
    bad = with_bad_version(stream.raw, 3)
    assert bad[:15] == stream.raw[:15]
    assert bad[15] & 0xF == 3 and bad[15] >> 4 == stream.raw[15] >> 4


def test_partial_rows_and_uncommitted() -> None:
    raw = raw_from_description(generation())
    assert rows_to_write(raw, []) == raw
    assert rows_to_write(raw, [GenerationFault(FaultKind.PARTIAL_ROWS, 3)]) == raw[:3]
    with pytest.raises(FaultError):
        rows_to_write(raw, [GenerationFault(FaultKind.PARTIAL_ROWS, len(raw))])
    assert commits([]) and commits([GenerationFault(FaultKind.RING_GAP)])
    assert not commits([GenerationFault(FaultKind.UNCOMMITTED)])


def test_raw_round_trip() -> None:
    description = generation()
    assert description_from_raw(raw_from_description(description)) == description


# --- log schema ----------------------------------------------------------------------------


def test_orders_log_table_has_scyllas_columns() -> None:
    columns = dict(log_columns(orders_table("ks")))
    assert columns == {
        '"cdc$stream_id"': "blob",
        '"cdc$time"': "timeuuid",
        '"cdc$batch_seq_no"': "int",
        '"cdc$operation"': "tinyint",
        '"cdc$ttl"': "bigint",
        '"cdc$end_of_batch"': "boolean",
        "pk": "int",
        "ck": "int",
        "v": "text",
        '"cdc$deleted_v"': "boolean",
        "tags": "frozen<set<text>>",
        '"cdc$deleted_tags"': "boolean",
        '"cdc$deleted_elements_tags"': "frozen<set<text>>",
    }
    cql = log_table_cql(orders_table("ks"))
    assert cql.startswith("CREATE TABLE IF NOT EXISTS ks.orders_scylla_cdc_log (")
    assert 'PRIMARY KEY ("cdc$stream_id", "cdc$time", "cdc$batch_seq_no")' in cql
    assert "'compaction_window_size': '60'" in cql  # 86400 s / 24 = 1 h
    assert "gc_grace_seconds = 0" in cql
    assert "comment = 'CDC log for ks.orders'" in cql


@pytest.mark.parametrize(
    ("text", "log", "deleted"),
    [
        ("int", "int", None),
        ("set<int>", "frozen<set<int>>", "frozen<set<int>>"),
        ("list<text>", "frozen<map<timeuuid, text>>", "frozen<set<timeuuid>>"),
        ("map<text, int>", "frozen<map<text, int>>", "frozen<set<text>>"),
        ("frozen<list<int>>", "frozen<list<int>>", None),
    ],
)
def test_collection_log_types(text: str, log: str, deleted: str | None) -> None:
    kind = ColumnType.parse(text)
    assert kind.log_cql() == log
    assert kind.deleted_elements_cql() == deleted


def test_table_spec_refuses_bad_names_and_types() -> None:
    with pytest.raises(ValueError):
        Column("Bad-Name", "int")
    with pytest.raises(InvalidTableSpec, match="must be frozen"):
        Column("x", "set<list<int>>")
    with pytest.raises(InvalidTableSpec, match="reserved"):
        Column("cdc_x", "int")
    with pytest.raises(InvalidTableSpec, match="partition key"):
        BaseTableSpec("ks", "t", ())


def test_twcs_window() -> None:
    assert twcs_window_minutes(86_400) == 60
    assert twcs_window_minutes(60) == 1
    assert twcs_window_minutes(3_000) == 3  # 125 s -> 3 min


# --- tokens and time UUIDs ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "token"),
    [(1, -4069959284402364209), (2, -3248873570005575792), (128, -9081975895656599623)],
)
def test_int_key_tokens_match_cassandra(key: int, token: int) -> None:
    assert partition.int_key_token(key) == token
    assert partition.partition_token(["int"], [key]) == token


def test_text_key_token() -> None:
    assert partition.partition_token(["text"], ["123"]) == -7468325962851647638


def test_min_token_is_normalised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(partition, "murmur3", lambda _: MIN_TOKEN)
    assert partition.token_of_bytes(b"x") == MAX_TOKEN


def test_compound_key_serialization() -> None:
    data = partition.serialize_partition_key(["int", "text"], [1, "ab"])
    assert data == b"\x00\x04" + struct.pack(">i", 1) + b"\x00" + b"\x00\x02ab\x00"


def test_timeuuid_carries_micros() -> None:
    rng = random.Random(3)
    micros = to_micros(T0) + 123_456
    value = timeuuid_from_micros(micros, rng)
    assert value.version == 1 and value.variant == uuid.RFC_4122
    assert micros_of_timeuuid(value) == micros
    assert abs(unix_time_from_uuid1(value) - micros / 1e6) < 1e-6
    assert from_micros(micros) == T0 + timedelta(microseconds=123_456)
    assert timeuuid_from_micros(micros, rng) != value  # random clock sequence and node


# --- routing -------------------------------------------------------------------------------


def test_vnode_router_follows_the_timeline() -> None:
    first, second = generation(1), generation(2)
    timeline = GenerationTimeline()
    timeline.insert(T0, first)
    timeline.insert(T0 + timedelta(seconds=10), second)
    router = VnodeRouter(timeline, timedelta(seconds=5))
    token = partition.int_key_token(7)
    now = T0 + timedelta(seconds=8)
    # Inside the leeway window a write stamped after the switch goes to the new generation.
    gen, stream = router.route(T0 + timedelta(seconds=11), token, now)
    assert gen == T0 + timedelta(seconds=10) and stream == second.get_stream(token)
    gen, stream = router.route(T0 + timedelta(seconds=7), token, now)
    assert gen == T0 and stream == first.get_stream(token)
    with pytest.raises(WriteFromTheFuture):
        router.route(T0 + timedelta(seconds=14), token, now)
    with pytest.raises(WriteFromThePast):
        router.route(T0 + timedelta(seconds=8), token, T0 + timedelta(seconds=20))
    assert len(router.streams(T0)) == first.stream_count()


def test_tablet_router_only_refuses_the_future() -> None:
    rng = random.Random(4)
    sets = [
        TabletStreamSet(T0, new_tablet_streams(2, rng)),
        TabletStreamSet(T0 + timedelta(seconds=10), new_tablet_streams(4, rng)),
    ]
    router = TabletRouter(sets, timedelta(seconds=5))
    token = partition.int_key_token(9)
    far_later = T0 + timedelta(hours=1)
    gen, stream = router.route(T0 + timedelta(seconds=1), token, far_later)
    assert gen == T0 and stream == sets[0].get_stream(token)
    with pytest.raises(WriteFromTheFuture):
        router.route(far_later, token, T0)
    with pytest.raises(NoGenerationForWrite):
        router.route(T0 - timedelta(seconds=1), token, T0)


# --- tablets ---------------------------------------------------------------------------------


def test_tablet_last_tokens() -> None:
    assert tablet_last_tokens(1) == [MAX_TOKEN]
    assert tablet_last_tokens(2) == [-1, MAX_TOKEN]
    assert tablet_last_tokens(4) == [-(2**62) - 1, -1, 2**62 - 1, MAX_TOKEN]
    with pytest.raises(InvalidTabletCount):
        tablet_last_tokens(3)
    streams = new_tablet_streams(4, random.Random(1))
    assert [s.token for s in streams] == tablet_last_tokens(4)
    assert all(s.index == 0 and s.version == 1 for s in streams)


def test_resize_timestamp_is_delayed_and_increasing() -> None:
    stamp = resize_timestamp(T0, timedelta(seconds=1), timedelta(seconds=5), T0)
    assert stamp == T0 + timedelta(seconds=7)
    later = T0 + timedelta(minutes=5)
    assert resize_timestamp(T0, timedelta(seconds=1), timedelta(seconds=5), later) == (
        later + timedelta(milliseconds=1)
    )


# --- log rows ----------------------------------------------------------------------------------


def test_log_rows_of_an_insert_batch() -> None:
    spec = orders_table("ks")
    write = BaseWrite(
        Operation.INSERT,
        (5,),
        (BaseRowChange((1,), {"v": "a", "tags": {"x"}}), BaseRowChange((2,), {"v": "b"})),
        1_000,
    )
    rows = log_row_values(spec, write)
    assert [r['"cdc$batch_seq_no"'] for r in rows] == [0, 1]
    assert all(r['"cdc$operation"'] == 2 for r in rows)
    assert '"cdc$end_of_batch"' not in rows[0] and rows[1]['"cdc$end_of_batch"'] is True
    assert rows[0]['"cdc$deleted_tags"'] is True  # a non-frozen collection is overwritten
    assert rows[0]["pk"] == 5 and rows[1]["ck"] == 2
    assert '"cdc$ttl"' not in rows[0]

    cql, names = log_insert_cql(spec)
    unset = object()
    params = log_insert_params(names, rows[0], b"s" * 16, "T", 1_000, 60, unset)
    assert params[-2:] == [1_000, 60]
    assert params[names.index('"cdc$stream_id"')] == b"s" * 16
    assert params[names.index('"cdc$deleted_v"')] is unset
    assert cql.endswith("USING TIMESTAMP ? AND TTL ?")


def test_partition_delete_and_update_statements() -> None:
    spec = orders_table("ks")
    delete = BaseWrite(Operation.PARTITION_DELETE, (5,), (), 7)
    rows = log_row_values(spec, delete)
    assert len(rows) == 1 and rows[0]['"cdc$operation"'] == 4 and "ck" not in rows[0]
    assert base_statements(spec, delete) == [
        ("DELETE FROM ks.orders USING TIMESTAMP ? WHERE pk = ?", [7, 5])
    ]
    update = BaseWrite(Operation.UPDATE, (5,), (BaseRowChange((1,), {"tags": {"y"}}),), 8, ttl=30)
    assert base_statements(spec, update) == [
        (
            "UPDATE ks.orders USING TIMESTAMP ? AND TTL ? SET tags = tags + ? "
            "WHERE pk = ? AND ck = ?",
            [8, 30, {"y"}, 5, 1],
        )
    ]
    assert log_row_values(spec, update)[0]['"cdc$ttl"'] == 30
    with pytest.raises(ValueError, match="no data columns"):
        base_statements(
            spec, BaseWrite(Operation.UPDATE, (5,), (BaseRowChange((1,), {"zz": 1}),), 8)
        )


# --- range deletes, nulls, set removals and overwrites ---------------------------------------

OP, SEQ, END, TTL_COL = '"cdc$operation"', '"cdc$batch_seq_no"', '"cdc$end_of_batch"', '"cdc$ttl"'


def two_ck_table() -> BaseTableSpec:
    """``(pk int, ck1 int, ck2 text, v int, tags set<text>)``: for clustering prefixes."""
    return BaseTableSpec(
        "ks",
        "t2",
        (Column("pk", "int"),),
        (Column("ck1", "int"), Column("ck2", "text")),
        (Column("v", "int"), Column("tags", "set<text>")),
    )


def range_delete(prefix: tuple[object, ...], start: object, end: object) -> BaseWrite:
    """``start``/``end``: ``(value, inclusive)`` or None for an open side."""
    bounds = [None if b is None else RangeBound(*b) for b in (start, end)]  # type: ignore[misc]
    return BaseWrite(RANGE_DELETE, (5,), (), 9, clustering_range=ClusteringRange(prefix, *bounds))


def keys_and_ops(spec: BaseTableSpec, write: BaseWrite) -> list[dict[str, object]]:
    """Each log row without its data columns: what a range delete's rows are made of."""
    rows = log_row_values(spec, write)
    assert [r[SEQ] for r in rows] == list(range(len(rows)))
    assert all(END not in r for r in rows[:-1]) and rows[-1][END] is True
    return [{k: v for k, v in r.items() if k not in (SEQ, END)} for r in rows]


def test_range_delete_is_two_bound_rows() -> None:
    spec = orders_table("ks")
    write = range_delete((), (3, False), (5, True))
    assert keys_and_ops(spec, write) == [{OP: 6, "pk": 5, "ck": 3}, {OP: 7, "pk": 5, "ck": 5}]
    assert base_statements(spec, write) == [
        (
            "DELETE FROM ks.orders USING TIMESTAMP ? WHERE pk = ? AND ck > ? AND ck <= ?",
            [9, 5, 3, 5],
        )
    ]
    write = range_delete((), (3, True), (5, False))
    assert keys_and_ops(spec, write) == [{OP: 5, "pk": 5, "ck": 3}, {OP: 8, "pk": 5, "ck": 5}]
    assert operation_label(RANGE_DELETE) == "range_delete"
    assert operation_label(Operation.ROW_DELETE) == "row_delete"


def test_open_range_bound_is_a_row_without_clustering_values() -> None:
    """cdc/log.cc ``range_delete`` logs both bounds; an open side is ``bound_view::top()``
    (or ``bottom()``): the empty prefix, inclusive, so 7 (or 5) with no clustering value."""
    spec = orders_table("ks")
    above = range_delete((), (3, False), None)
    assert keys_and_ops(spec, above) == [{OP: 6, "pk": 5, "ck": 3}, {OP: 7, "pk": 5}]
    assert base_statements(spec, above) == [
        ("DELETE FROM ks.orders USING TIMESTAMP ? WHERE pk = ? AND ck > ?", [9, 5, 3])
    ]
    from_three = range_delete((), (3, True), None)
    assert keys_and_ops(spec, from_three)[0] == {OP: 5, "pk": 5, "ck": 3}
    assert "ck >= ?" in base_statements(spec, from_three)[0][0]
    below = range_delete((), None, (3, False))  # the docs' ``ck < 3``: 5 with null ck, then 8
    assert keys_and_ops(spec, below) == [{OP: 5, "pk": 5}, {OP: 8, "pk": 5, "ck": 3}]
    assert base_statements(spec, below)[0][0].endswith("WHERE pk = ? AND ck < ?")


def test_range_delete_with_a_clustering_prefix() -> None:
    spec = two_ck_table()
    both = range_delete((1,), ("a", False), ("c", False))
    assert keys_and_ops(spec, both) == [
        {OP: 6, "pk": 5, "ck1": 1, "ck2": "a"},
        {OP: 8, "pk": 5, "ck1": 1, "ck2": "c"},
    ]
    assert base_statements(spec, both) == [
        (
            "DELETE FROM ks.t2 USING TIMESTAMP ? WHERE pk = ? AND ck1 = ? AND ck2 > ? AND ck2 < ?",
            [9, 5, 1, "a", "c"],
        )
    ]
    # ``ck1 = 1 AND ck2 > 'a'``: from (1, 'a') exclusive to (1) inclusive.
    above = range_delete((1,), ("a", False), None)
    assert keys_and_ops(spec, above) == [
        {OP: 6, "pk": 5, "ck1": 1, "ck2": "a"},
        {OP: 7, "pk": 5, "ck1": 1},
    ]
    # ``ck1 = 1`` alone: the prefix, inclusive, on both sides.
    prefix = range_delete((1,), None, None)
    assert keys_and_ops(spec, prefix) == [{OP: 5, "pk": 5, "ck1": 1}, {OP: 7, "pk": 5, "ck1": 1}]
    assert base_statements(spec, prefix)[0][0].endswith("WHERE pk = ? AND ck1 = ?")
    # A range on the first column leaves the second one unset in both rows.
    first = range_delete((), (1, False), (4, True))
    assert keys_and_ops(spec, first) == [{OP: 6, "pk": 5, "ck1": 1}, {OP: 7, "pk": 5, "ck1": 4}]


@pytest.mark.parametrize(
    ("prefix", "start", "end", "message"),
    [
        ((1,), None, None, "leave a clustering column open"),  # a full key: a row delete
        ((), None, None, "partition delete"),
        ((), (5, True), (5, True), "below its end"),  # one row: ScyllaDB logs a row delete
        ((), (6, True), (5, True), "below its end"),
    ],
)
def test_bad_ranges_are_refused(
    prefix: tuple[object, ...], start: object, end: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        log_row_values(orders_table("ks"), range_delete(prefix, start, end))


def test_range_delete_needs_a_range_and_no_rows() -> None:
    spec = orders_table("ks")
    with pytest.raises(ValueError, match="only a range delete"):
        base_statements(spec, BaseWrite(RANGE_DELETE, (5,), (), 9))
    with pytest.raises(ValueError, match="only a range delete"):
        log_row_values(
            spec, BaseWrite(Operation.UPDATE, (5,), (), 9, clustering_range=ClusteringRange((1,)))
        )
    with pytest.raises(ValueError, match="not a base write"):
        log_row_values(spec, BaseWrite(Operation.RANGE_DELETE_END_INCLUSIVE, (5,), (), 9))
    no_ck = BaseTableSpec("ks", "kv", (Column("pk", "int"),), (), (Column("v", "int"),))
    with pytest.raises(ValueError, match="clustering column"):
        log_row_values(no_ck, range_delete((), (1, True), None))


def update(change: BaseRowChange, ttl: int | None = None) -> BaseWrite:
    return BaseWrite(Operation.UPDATE, (5,), (change,), 8, ttl)


def test_update_to_null_logs_the_deleted_flag() -> None:
    spec = orders_table("ks")
    write = update(BaseRowChange((1,), {"v": None, "tags": {"x"}}))
    (row,) = log_row_values(spec, write)
    assert row['"cdc$deleted_v"'] is True and "v" not in row
    assert row["tags"] == {"x"} and '"cdc$deleted_tags"' not in row
    assert base_statements(spec, write) == [
        (
            "UPDATE ks.orders USING TIMESTAMP ? SET v = null, tags = tags + ? "
            "WHERE pk = ? AND ck = ?",
            [8, {"x"}, 5, 1],
        )
    ]
    set_null = update(BaseRowChange((1,), {"tags": None}))
    (row,) = log_row_values(spec, set_null)
    assert row['"cdc$deleted_tags"'] is True and "tags" not in row
    assert "SET tags = null WHERE" in base_statements(spec, set_null)[0][0]


def test_set_overwrite_and_element_removal() -> None:
    spec = orders_table("ks")
    overwrite = update(BaseRowChange((1,), {"tags": {"x"}}, overwritten=frozenset({"tags"})))
    (row,) = log_row_values(spec, overwrite)
    assert row["tags"] == {"x"} and row['"cdc$deleted_tags"'] is True
    assert '"cdc$deleted_elements_tags"' not in row
    assert base_statements(spec, overwrite)[0] == (
        "UPDATE ks.orders USING TIMESTAMP ? SET tags = ? WHERE pk = ? AND ck = ?",
        [8, {"x"}, 5, 1],
    )
    removal = update(BaseRowChange((1,), {"v": "a"}, removed={"tags": {"y", "z"}}))
    (row,) = log_row_values(spec, removal)
    assert row['"cdc$deleted_elements_tags"'] == {"y", "z"} and row["v"] == "a"
    assert "tags" not in row and '"cdc$deleted_tags"' not in row
    assert base_statements(spec, removal)[0] == (
        "UPDATE ks.orders USING TIMESTAMP ? SET v = ?, tags = tags - ? WHERE pk = ? AND ck = ?",
        [8, "a", {"y", "z"}, 5, 1],
    )
    names = {name for name, _ in log_columns(spec)}
    assert all(set(r) <= names for w in (overwrite, removal) for r in log_row_values(spec, w))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (BaseRowChange((1,), {"tags": {"x"}}, removed={"tags": {"y"}}), "one way per statement"),
        (BaseRowChange((1,), removed={"v": {"y"}}), "non-frozen set"),
        (BaseRowChange((1,), removed={"tags": set()}), "no elements"),
        (BaseRowChange((1,), {"v": "a"}, overwritten=frozenset({"v"})), "overwrites"),
        (BaseRowChange((1,)), "must change a column"),
    ],
)
def test_inexpressible_updates_are_refused(change: BaseRowChange, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        base_statements(orders_table("ks"), update(change))


def test_insert_cannot_remove_elements() -> None:
    insert = BaseWrite(Operation.INSERT, (5,), (BaseRowChange((1,), removed={"tags": {"y"}}),), 8)
    with pytest.raises(ValueError, match="only an UPDATE"):
        log_row_values(orders_table("ks"), insert)


def test_ttl_is_split_from_dead_cells() -> None:
    """cdc/split.cc: dead cells and tombstones have no TTL, so with ``USING TTL`` they are a
    change (a log row) of their own, before the live cells' row (docs: cdc$ttl example)."""
    spec = orders_table("ks")
    mixed = update(BaseRowChange((1,), {"v": None, "tags": {"x"}}), ttl=30)
    assert [
        {k: v for k, v in r.items() if k not in ("pk", "ck")} for r in log_row_values(spec, mixed)
    ] == [
        {SEQ: 0, OP: 1, '"cdc$deleted_v"': True},
        {SEQ: 1, OP: 1, TTL_COL: 30, "tags": {"x"}, END: True},
    ]
    only_null = update(BaseRowChange((1,), {"v": None}), ttl=30)
    (row,) = log_row_values(spec, only_null)
    assert TTL_COL not in row and row['"cdc$deleted_v"'] is True
    overwrite = update(BaseRowChange((1,), {"tags": {"x"}}, overwritten=frozenset({"tags"})), 30)
    assert [
        (r.get('"cdc$deleted_tags"'), r.get("tags"), r.get(TTL_COL))
        for r in log_row_values(spec, overwrite)
    ] == [(True, None, None), (None, {"x"}, 30)]


def test_insert_with_ttl_splits_its_collections_like_scylla() -> None:
    """cdc_test.cc (``insert ... (pk,ck,m) values (1,1,{4:4}) using ttl 5``): the INSERT row
    (marker), then an UPDATE with the collection tombstone, then one with its elements."""
    spec = orders_table("ks")
    rows = (BaseRowChange((1,), {"v": "a", "tags": {"x"}}), BaseRowChange((2,), {"v": "b"}))
    log = log_row_values(spec, BaseWrite(Operation.INSERT, (5,), rows, 8, ttl=60))
    assert [(r["ck"], r[OP], r.get(TTL_COL)) for r in log] == [
        (1, 2, 60), (2, 2, 60), (1, 1, None), (1, 1, 60)
    ]  # fmt: skip
    assert log[0]["v"] == "a" and "tags" not in log[0] and '"cdc$deleted_tags"' not in log[0]
    assert log[2]['"cdc$deleted_tags"'] is True and log[3]["tags"] == {"x"}
    # Without a TTL it is one row per clustering row, as before.
    log = log_row_values(spec, BaseWrite(Operation.INSERT, (5,), rows, 8))
    assert [r[OP] for r in log] == [2, 2] and log[0]['"cdc$deleted_tags"'] is True


# --- the random writes -----------------------------------------------------------------------


def random_writes(spec: BaseTableSpec, seed: int, count: int = 600) -> list[BaseWrite]:
    """Writes of the default mix with ten times more range deletes (to see every shape)."""
    mix = {**DEFAULT_MIX, RANGE_DELETE: 0.3}
    factory = WriteFactory(spec, random.Random(seed), mix, keys=50, base_ttl=None)
    return [factory.make(1_000 + n) for n in range(count)]


@pytest.mark.parametrize("spec", [orders_table("ks"), two_ck_table()], ids=["orders", "two_ck"])
def test_random_writes_cover_every_change_and_fit_the_log(spec: BaseTableSpec) -> None:
    writes = random_writes(spec, seed=7)
    assert writes == random_writes(spec, seed=7)  # a seed replays the same writes
    names = {name for name, _ in log_columns(spec)}
    seen: set[object] = set()
    for write in writes:
        for row in log_row_values(spec, write):
            assert set(row) <= names
            seen.add(row[OP])
            seen.update(k for k in row if k.startswith('"cdc$deleted'))
        base_statements(spec, write)  # every write is expressible
        if write.clustering_range is not None:
            bounds = (write.clustering_range.start, write.clustering_range.end)
            seen.add(tuple(b is None for b in bounds))
            seen.add(("prefix", len(write.clustering_range.prefix)))
    assert set(range(1, 9)) <= seen
    assert {'"cdc$deleted_v"', '"cdc$deleted_tags"', '"cdc$deleted_elements_tags"'} <= seen
    assert {(False, False), (False, True), (True, False)} <= seen  # both, open end, open start
    if len(spec.clustering_key) > 1:
        assert {("prefix", 0), ("prefix", 1), (True, True)} <= seen


def test_tables_without_clustering_key_get_no_range_deletes() -> None:
    spec = BaseTableSpec("ks", "kv", (Column("pk", "int"),), (), (Column("v", "int"),))
    assert all(w.operation is not RANGE_DELETE for w in random_writes(spec, seed=3))
    with pytest.raises(EmulatorError, match="no operation"):
        WriteFactory(spec, random.Random(1), {RANGE_DELETE: 1.0}, keys=5)


def test_workload_mix_keys_range_deletes_by_their_start_code() -> None:
    assert DEFAULT_MIX[Operation.RANGE_DELETE_START_INCLUSIVE] == 0.03
    assert sum(DEFAULT_MIX.values()) == pytest.approx(1.0)
    with pytest.raises(EmulatorError, match="RANGE_DELETE_END_INCLUSIVE"):
        WorkloadSpec("ks", mix={Operation.RANGE_DELETE_END_INCLUSIVE: 1.0})
