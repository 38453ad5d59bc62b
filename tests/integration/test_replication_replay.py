"""Replayed changes against the real database: the sink ends equal to the source.

The same writes go to a source table as CQL and, as the log rows ScyllaDB writes for
them, through :func:`cdcgen.core.replication.batch_statements` (one single-partition
batch per CDC batch) to a sink table of the same definition. Both tables must then hold
the same rows with the same write timestamps, and replaying every batch again, or an
older batch after a newer one, must change nothing (last writer wins).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.core.cdc_log import Operation
from cdcgen.core.replication import ColumnKind, SinkTable, batch_statements

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


def replay(client: CqlClient, batches: list[tuple[int, list[dict[str, Any]]]]) -> None:
    from cassandra.query import BatchStatement, BatchType

    keyspace = client.session.keyspace
    sink = SinkTable(keyspace, "sink", ("pk",), ("ck1", "ck2"), KINDS)
    for write_time, logged in batches:
        rows = [{"cdc$operation": int(r["op"]), **r} for r in logged]
        batch = BatchStatement(batch_type=BatchType.UNLOGGED)
        for statement in batch_statements(sink, rows, write_time):
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
