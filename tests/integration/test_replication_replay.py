"""Replayed changes against the real database: the sink ends equal to the source.

The same writes go to a source table as CQL and, as the log rows ScyllaDB writes for
them, through the CQL rules (:mod:`cdcgen.core.operations`, then
:mod:`cdcgen.core.sink_statements`; one single-partition batch per CDC batch) to a sink
table of the same definition. Both tables must then hold
the same rows with the same write timestamps, and replaying every batch again, or an
older batch after a newer one, must change nothing (last writer wins). The shapes:
clustering rows with sets and maps; static columns (their own log rows, by partition
key); UDTs (non-frozen: field by field, overwritten whole, fields set to null by index;
frozen) and tuples; and TTLs replayed late, some expired by then.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from change_rows import batch_statements

from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.core.cdc_log import Operation
from cdcgen.core.operations.table import ColumnKind, TableShape

pytestmark = pytest.mark.integration

T1, T2, T3 = 1_700_000_000_000_000, 1_700_000_000_000_100, 1_700_000_000_000_200
COLUMNS = "pk int, ck1 int, ck2 text, qty int, tags set<text>, attrs map<text, text>"
KINDS = {"qty": ColumnKind.ATOMIC, "tags": ColumnKind.SET, "attrs": ColumnKind.MAP}

# (base writes as CQL at their timestamp, the CDC batch ScyllaDB logs for them)
WRITES: list[tuple[list[str], int, list[dict[str, Any]]]] = [
    (
        ["INSERT INTO {t} (pk, ck1, ck2, qty, tags) VALUES (1, 1, 'a', 5, {{'x', 'y'}})"],
        T1,
        [{"op": Operation.INSERT, "pk": 1, "ck1": 1, "ck2": "a", "qty": 5,
          "tags": {"x", "y"}, "cdc$deleted_tags": True}],
    ),
    (
        ["INSERT INTO {t} (pk, ck1, ck2, qty) VALUES (1, 2, 'b', 7)"]
        + [f"INSERT INTO {{t}} (pk, ck1, ck2, qty) VALUES (1, {c}, 'c', {c})" for c in (3, 4, 5)],
        T1,
        [{"op": Operation.INSERT, "pk": 1, "ck1": 2, "ck2": "b", "qty": 7}]
        + [{"op": Operation.INSERT, "pk": 1, "ck1": c, "ck2": "c", "qty": c} for c in (3, 4, 5)],
    ),
    (
        ["INSERT INTO {t} (pk, ck1, ck2, qty) VALUES (2, 1, 'p', 1)"],
        T1,
        [{"op": Operation.INSERT, "pk": 2, "ck1": 1, "ck2": "p", "qty": 1}],
    ),
    (
        ["UPDATE {t} SET qty = null, tags = tags + {{'z'}}, attrs = attrs + {{'k': 'v'}} "
         "WHERE pk = 1 AND ck1 = 1 AND ck2 = 'a'",
         "UPDATE {t} SET tags = tags - {{'x'}} WHERE pk = 1 AND ck1 = 1 AND ck2 = 'a'"],
        T2,
        [{"op": Operation.UPDATE, "pk": 1, "ck1": 1, "ck2": "a", "qty": None,
          "cdc$deleted_qty": True, "tags": {"z"}, "attrs": {"k": "v"},
          "cdc$deleted_elements_tags": {"x"}}],
    ),
    (
        ["DELETE FROM {t} WHERE pk = 1 AND ck1 = 2 AND ck2 = 'b'"],
        T3,
        [{"op": Operation.ROW_DELETE, "pk": 1, "ck1": 2, "ck2": "b"}],
    ),
    (
        ["DELETE FROM {t} WHERE pk = 1 AND ck1 > 3 AND ck1 <= 5"],
        T3,
        [{"op": Operation.RANGE_DELETE_START_EXCLUSIVE, "pk": 1, "ck1": 3},
         {"op": Operation.RANGE_DELETE_END_INCLUSIVE, "pk": 1, "ck1": 5}],
    ),
    (
        ["UPDATE {t} SET attrs = {{'n': 'm'}} WHERE pk = 1 AND ck1 = 1 AND ck2 = 'a'"],
        T3,
        [{"op": Operation.UPDATE, "pk": 1, "ck1": 1, "ck2": "a", "attrs": {"n": "m"},
          "cdc$deleted_attrs": True}],
    ),
    (
        ["DELETE FROM {t} WHERE pk = 2"],
        T3,
        [{"op": Operation.PARTITION_DELETE, "pk": 2}],
    ),
]  # fmt: skip


@pytest.fixture
def client(contact_points: tuple[str, ...]) -> Iterator[CqlClient]:
    client = connect(contact_points)
    keyspace = f"t_replay_{uuid.uuid4().hex[:8]}"
    client.session.execute(
        f"CREATE KEYSPACE {keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}",
        timeout=60,
    )
    for table in ("source", "sink"):
        client.session.execute(
            f"CREATE TABLE {keyspace}.{table} ({COLUMNS}, PRIMARY KEY (pk, ck1, ck2))", timeout=60
        )
    client.session.set_keyspace(keyspace)
    yield client
    client.session.execute(f"DROP KEYSPACE {keyspace}", timeout=60)
    client.close()


def replay(
    client: CqlClient,
    batches: list[tuple[int, list[dict[str, Any]]]],
    sink: TableShape | None = None,
) -> None:
    from cassandra.query import BatchStatement, BatchType

    keyspace = client.session.keyspace
    sink = sink or TableShape(keyspace, "sink", ("pk",), ("ck1", "ck2"), KINDS)
    for write_time, logged in batches:
        rows = [{"cdc$operation": int(r["op"]), **r} for r in logged]
        batch = BatchStatement(batch_type=BatchType.UNLOGGED)
        now_us = int(time.time() * 1_000_000)
        for statement in batch_statements(sink, rows, write_time, now_us=now_us):
            batch.add(client.session.prepare(statement.cql), statement.values)
        client.session.execute(batch)


def contents(client: CqlClient, table: str) -> list[tuple[Any, ...]]:
    rows = client.session.execute(
        f"SELECT pk, ck1, ck2, qty, tags, attrs, WRITETIME(qty) FROM {table}"
    )
    return sorted(tuple(r) for r in rows)


def test_the_sink_equals_the_source_and_replays_change_nothing(client: CqlClient) -> None:
    for statements, write_time, _ in WRITES:
        for cql in statements:
            client.session.execute(
                f"{cql.format(t='source')} USING TIMESTAMP {write_time}"
                if cql.startswith("INSERT")
                else cql.format(t=f"source USING TIMESTAMP {write_time}")
            )
    batches = [(write_time, logged) for _, write_time, logged in WRITES]
    replay(client, batches)
    source = contents(client, "source")
    assert source == contents(client, "sink")
    assert source == [
        (1, 1, "a", None, {"y", "z"}, {"n": "m"}, None),
        (1, 3, "c", 3, None, None, T1),
    ]
    replay(client, batches)  # at least once: a second delivery changes nothing
    replay(client, list(reversed(batches)))  # late and out of order: nothing older wins
    assert contents(client, "sink") == source


SHAPES = (
    "pk int, ck int, s text static, home address, fhome frozen<address>, "
    "pair frozen<tuple<int, text>>, tags set<text>, PRIMARY KEY (pk, ck)"
)
ADDRESS = ("street", "zip")
E, F = ("Elm", 1), ("Fir", 9)
# Static rows are logged as rows of their own with no clustering key (ScyllaDB's
# test/cql/cdc_static_and_clustered_rows_test), before the clustering row of the write.
SHAPE_WRITES: list[tuple[list[str], int, list[dict[str, Any]]]] = [
    (
        ["UPDATE {t} SET s = 'x' WHERE pk = 1"],
        T1,
        [{"op": Operation.UPDATE, "pk": 1, "s": "x"}],
    ),
    (
        ["INSERT INTO {t} (pk, ck, home, fhome, pair, tags) VALUES "
         "(1, 1, {{street: 'Elm', zip: 1}}, {{street: 'Fir', zip: 9}}, (3, 'c'), {{'a'}})"],
        T1,
        [{"op": Operation.INSERT, "pk": 1, "ck": 1, "home": E, "cdc$deleted_home": True,
          "fhome": F, "pair": (3, "c"), "tags": {"a"}, "cdc$deleted_tags": True}],
    ),
    (
        ["UPDATE {t} SET home.zip = 2, s = 'y' WHERE pk = 1 AND ck = 1"],
        T2,
        [{"op": Operation.UPDATE, "pk": 1, "s": "y"},
         {"op": Operation.UPDATE, "pk": 1, "ck": 1, "home": (None, 2)}],
    ),
    (
        ["UPDATE {t} SET home.street = null WHERE pk = 1 AND ck = 1"],
        T3,
        [{"op": Operation.UPDATE, "pk": 1, "ck": 1, "cdc$deleted_elements_home": {0}}],
    ),
    (
        ["INSERT INTO {t} (pk, ck, home) VALUES (2, 1, {{street: 'Ash', zip: 4}})"],
        T2,
        [{"op": Operation.INSERT, "pk": 2, "ck": 1, "home": ("Ash", 4), "cdc$deleted_home": True}],
    ),
    (
        ["UPDATE {t} SET home = {{street: 'Oak'}}, s = null WHERE pk = 2 AND ck = 1"],
        T3,
        [{"op": Operation.UPDATE, "pk": 2, "s": None, "cdc$deleted_s": True},
         {"op": Operation.UPDATE, "pk": 2, "ck": 1, "home": ("Oak", None),
          "cdc$deleted_home": True}],
    ),
    (
        ["INSERT INTO {t} (pk, s) VALUES (3, 'only')"],
        T1,
        [{"op": Operation.INSERT, "pk": 3, "s": "only"}],
    ),
]  # fmt: skip


def shapes_sink(keyspace: str) -> TableShape:
    kinds = {
        "s": ColumnKind.ATOMIC, "home": ColumnKind.UDT, "fhome": ColumnKind.ATOMIC,
        "pair": ColumnKind.ATOMIC, "tags": ColumnKind.SET,
    }  # fmt: skip
    return TableShape(
        keyspace, "sink_shapes", ("pk",), ("ck",), kinds,
        static=frozenset({"s"}), fields={"home": ADDRESS},
    )  # fmt: skip


def test_static_columns_udts_and_tuples_replay_exactly(client: CqlClient) -> None:
    client.session.execute("CREATE TYPE address (street text, zip int)")
    for table in ("source_shapes", "sink_shapes"):
        client.session.execute(f"CREATE TABLE {table} ({SHAPES})", timeout=60)
    for statements, write_time, _ in SHAPE_WRITES:
        for cql in statements:
            using = f" USING TIMESTAMP {write_time}"
            text = cql.format(t="source_shapes")
            if text.startswith("INSERT"):
                client.session.execute(text + using)
            else:
                client.session.execute(text.replace("source_shapes", "source_shapes" + using, 1))
    sink = shapes_sink(client.session.keyspace)
    batches = [(write_time, logged) for _, write_time, logged in SHAPE_WRITES]
    replay(client, batches, sink)

    def shapes(table: str) -> list[tuple[Any, ...]]:
        columns = "pk, ck, s, home, fhome, pair, tags, WRITETIME(s), WRITETIME(fhome)"
        rows = client.session.execute(f"SELECT {columns} FROM {table}")
        return sorted(tuple(str(v) for v in r) for r in rows)

    source = shapes("source_shapes")
    assert shapes("sink_shapes") == source
    assert len(source) == 3 and any("Oak" in row[3] for row in source)  # overwritten whole
    assert any(row[1] == "None" and row[2] == "only" for row in source)  # a static-only row
    replay(client, batches, sink)
    replay(client, list(reversed(batches)), sink)
    assert shapes("sink_shapes") == source


def test_ttls_count_from_the_original_write_and_expired_cells_stay_dead(
    client: CqlClient,
) -> None:
    """A change replayed seconds after it was written: its cells expire on the sink when
    they expire on the source, and a cell that expired meanwhile does not come back."""
    old = int(time.time() * 1_000_000) - 60_000_000
    now = int(time.time() * 1_000_000)
    writes: list[tuple[list[str], int, list[dict[str, Any]]]] = [
        (
            ["INSERT INTO {t} (pk, ck1, ck2, qty, tags) VALUES (7, 1, 'a', 1, {{'kept'}})"],
            old,
            [{"op": Operation.INSERT, "pk": 7, "ck1": 1, "ck2": "a", "qty": 1,
              "tags": {"kept"}, "cdc$deleted_tags": True}],
        ),
        (
            ["UPDATE {t} SET qty = 2, tags = tags + {{'gone'}} WHERE pk = 7 AND ck1 = 1 "
             "AND ck2 = 'a'"],
            now,
            [{"op": Operation.UPDATE, "pk": 7, "ck1": 1, "ck2": "a", "qty": 2,
              "tags": {"gone"}, "cdc$ttl": 2}],
        ),
        (
            ["INSERT INTO {t} (pk, ck1, ck2, qty) VALUES (8, 1, 'a', 3)"],
            now,
            [{"op": Operation.INSERT, "pk": 8, "ck1": 1, "ck2": "a", "qty": 3, "cdc$ttl": 600}],
        ),
    ]  # fmt: skip
    for statements, write_time, logged in writes:
        ttl = logged[0].get("cdc$ttl")
        using = f" USING TIMESTAMP {write_time}" + (f" AND TTL {ttl}" if ttl else "")
        for cql in statements:
            text = cql.format(t="source")
            if text.startswith("INSERT"):
                client.session.execute(text + using)
            else:
                client.session.execute(text.replace("source", "source" + using, 1))
    time.sleep(3.5)  # the 2 s TTL has run out on the source: the lag of a replay
    replay(client, [(write_time, logged) for _, write_time, logged in writes])
    assert contents(client, "sink") == contents(client, "source")
    assert contents(client, "source")[0][3:5] == (None, {"kept"})  # qty=2 expired over qty=1

    def ttl_of(table: str) -> int:
        row = client.session.execute(
            f"SELECT TTL(qty) FROM {table} WHERE pk = 8 AND ck1 = 1 AND ck2 = 'a'"
        ).one()
        assert row is not None
        return int(row[0])

    assert ttl_of("source") - 2 <= ttl_of("sink") <= ttl_of("source")  # not 600 again


def test_range_deletes_on_descending_clustering_columns(client: CqlClient) -> None:
    """ScyllaDB logs a range tombstone's bounds in clustering order (``cdc/log.cc``): on a
    ``DESC`` column the start bound holds the larger value. Replayed as value relations
    turned around, the sink deletes exactly the rows the source deleted."""
    columns = "pk int, ts int, seq int, v int, PRIMARY KEY (pk, ts, seq)"
    order = "WITH CLUSTERING ORDER BY (ts DESC, seq ASC)"
    for table in ("source_desc", "sink_desc"):
        client.session.execute(f"CREATE TABLE {table} ({columns}) {order}", timeout=60)
        for ts in range(1, 9):
            for seq in range(1, 4):
                client.session.execute(
                    f"INSERT INTO {table} (pk, ts, seq, v) VALUES (1, {ts}, {seq}, 0) "
                    f"USING TIMESTAMP {T1}"
                )
    client.session.execute(f"DELETE FROM source_desc USING TIMESTAMP {T2} WHERE pk = 1 "
                           "AND ts > 3 AND ts <= 5")  # fmt: skip
    client.session.execute(f"DELETE FROM source_desc USING TIMESTAMP {T2} WHERE pk = 1 "
                           "AND ts = 7 AND seq > 1")  # fmt: skip
    batches = [
        (T2, [{"op": Operation.RANGE_DELETE_START_INCLUSIVE, "pk": 1, "ts": 5},
              {"op": Operation.RANGE_DELETE_END_EXCLUSIVE, "pk": 1, "ts": 3}]),
        (T2, [{"op": Operation.RANGE_DELETE_START_EXCLUSIVE, "pk": 1, "ts": 7, "seq": 1},
              {"op": Operation.RANGE_DELETE_END_INCLUSIVE, "pk": 1, "ts": 7}]),
    ]  # fmt: skip
    sink = TableShape(
        client.session.keyspace, "sink_desc", ("pk",), ("ts", "seq"), {"v": ColumnKind.ATOMIC},
        descending=frozenset({"ts"}),
    )  # fmt: skip

    def rows(table: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in client.session.execute(f"SELECT ts, seq FROM {table}"))

    replay(client, batches, sink)
    assert rows("sink_desc") == rows("source_desc")
    assert len(rows("source_desc")) == 24 - 6 - 2  # both deletes took rows
