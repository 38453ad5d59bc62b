"""The mirror's fold against the real database: the same mutations, written to a table as
CQL and folded without one, read the same, cell for cell and write time for write time.

Seeded random mutations of every kind the change model has (inserts with their row
marker, updates, nulls, set and map elements added, removed and overwritten, static
cells, row, partition and range deletes on an ascending and a descending clustering
column, TTLs), at write times drawn from five microseconds so that many tie, in random
order (client timestamps out of order), each written as the sink writes it
(:mod:`cdcgen.core.sink_statements`, one batch per mutation). The database resolves them;
:mod:`cdcgen.core.mirror_fold` must resolve them alike, given the order of values
(:mod:`cdcgen.adapters.cql_value_order`) from the table's own driver type classes.

The local database is Apache Cassandra 5, whose order of two cells differs from
ScyllaDB's in one case only: two live cells with equal write times and equal expiries
but different TTLs (ScyllaDB keeps the smaller TTL, Cassandra compares values). The
mutations here never make that case: no two writes with a TTL share a write time (the
database counts a TTL from the second it applies the write, so their expiries could
tie there and not here); ``tests/unit/core/operations/test_reconcile.py`` pins
ScyllaDB's rule.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.cql_value_order import CqlValueOrder
from cdcgen.adapters.table_schemas import CqlTableSchemas
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.mirror_fold import Fold, PartitionCells
from cdcgen.core.operations.mutations import (
    AddElements,
    Bound,
    CellChange,
    Mutation,
    Overwrite,
    PartitionDelete,
    RangeDelete,
    RemoveElements,
    RowDelete,
    RowWrite,
    SetValue,
)
from cdcgen.core.operations.table import ColumnKind, TableShape
from cdcgen.core.sink_statements import statements

pytestmark = pytest.mark.integration

COLUMNS = "pk int, ck int, v int, tags set<int>, props map<int, int>, s int static"
KINDS = {
    "v": ColumnKind.ATOMIC,
    "tags": ColumnKind.SET,
    "props": ColumnKind.MAP,
    "s": ColumnKind.ATOMIC,
}
SEEDS = range(10)
MUTATIONS = 70


@pytest.fixture(scope="module")
def client(contact_points: tuple[str, ...]) -> Iterator[CqlClient]:
    client = connect(contact_points)
    keyspace = f"t_mirror_{uuid.uuid4().hex[:8]}"
    client.session.execute(
        f"CREATE KEYSPACE {keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}",
        timeout=60,
    )
    client.session.set_keyspace(keyspace)
    yield client
    client.session.execute(f"DROP KEYSPACE {keyspace}", timeout=60)
    client.close()


def drawn(table: TableShape, draw: random.Random, base_us: int, ttl_times: set[int]) -> Mutation:
    """One random mutation of partition 1 or 2, at one of a few write times (those of
    writes with a TTL in ``ttl_times``, each once)."""
    pk = draw.choice((1, 2))
    at = base_us + draw.randrange(5)
    kind = draw.choices(["write", "static", "row", "partition", "range"], [12, 2, 2, 1, 2])[0]
    small = [-2, -1, 0, 1, 2]
    if kind == "static":
        value = draw.choice([None, *small])
        return RowWrite((pk,), True, False, at, None, (SetValue("s", value),))
    if kind == "row":
        return RowDelete((pk, draw.randrange(4)), at)
    if kind == "partition":
        return PartitionDelete((pk,), at)
    if kind == "range":
        low, high = sorted(draw.sample(range(4), 2))
        ends = [Bound((low,), draw.random() < 0.5), Bound((high,), draw.random() < 0.5)]
        if table.descending:  # logged in clustering order: the larger value first
            ends.reverse()
        if draw.random() < 0.2:
            ends[draw.randrange(2)] = Bound((), True)  # open
        return RangeDelete((pk,), ends[0], ends[1], at)
    marker = draw.random() < 0.4
    # a TTL is long (nothing expires while the test runs), and no two writes with one
    # share a write time (see the module's docstring)
    ttl = None
    if draw.random() < 0.25:
        ttl = 100_000 + draw.randrange(3)
        while at in ttl_times:
            at += 1_000_000
        ttl_times.add(at)
    cells: list[CellChange] = []
    if draw.random() < 0.7:
        cells.append(SetValue("v", draw.choice([None, *small])))
    if draw.random() < 0.5:
        elements = draw.sample(small, draw.randrange(3))
        if marker or draw.random() < 0.3:
            cells.append(Overwrite("tags", elements or None))
        elif elements:
            cells.append(AddElements("tags", elements))
        else:
            cells.append(RemoveElements("tags", set(draw.sample(small, 2))))
    if draw.random() < 0.4:
        entries = {k: draw.choice(small) for k in draw.sample(small, draw.randrange(1, 3))}
        if marker or draw.random() < 0.3:
            cells.append(Overwrite("props", entries))
        elif draw.random() < 0.7:
            cells.append(AddElements("props", entries))
        else:
            cells.append(RemoveElements("props", set(entries)))
    if not cells:
        cells.append(SetValue("v", draw.choice(small)))
    return RowWrite((pk, draw.randrange(4)), False, marker, at, ttl, tuple(cells))


def written(client: CqlClient, table: TableShape, mutation: Mutation, now_us: int) -> None:
    from cassandra.query import BatchStatement, BatchType

    batch = BatchStatement(batch_type=BatchType.UNLOGGED)
    for statement in statements(table, [mutation], now_us=now_us):
        batch.add(client.prepared(statement.cql), statement.values)
    client.session.execute(batch)


def database_rows(client: CqlClient, table: TableShape) -> list[tuple[Any, ...]]:
    rows = client.session.execute(
        f"SELECT pk, ck, v, WRITETIME(v), tags, props, s, WRITETIME(s) FROM {table.qualified}"
    )
    return sorted(
        (
            r.pk, r.ck, r.v, r.writetime_v, sorted(r.tags or []),
            sorted((r.props or {}).items()), r.s, r.writetime_s,
        )
        for r in rows
    )  # fmt: skip


def folded_rows(
    table: TableShape, order: CqlValueOrder, mutations: list[Mutation], now_s: int
) -> list[tuple[Any, ...]]:
    fold = Fold(table, order.serialized, order.sort_key)
    partitions: dict[int, PartitionCells] = {}
    for mutation in mutations:
        fold.apply(partitions.setdefault(mutation.key[0], PartitionCells()), mutation)
    out = []
    for pk, partition in partitions.items():
        rows = list(fold.rows((pk,), partition, now_s))
        static = next((r for r in rows if r.static), None)
        s = (static.values["s"], static.write_times.get("s")) if static else (None, None)
        clustering = [r for r in rows if not r.static]
        for row in clustering:
            v = row.values
            out.append(
                (pk, row.key[1], v["v"], row.write_times.get("v"), v["tags"] or [],
                 v["props"] or [], *s)
            )  # fmt: skip
        if not clustering and static is not None:  # CQL returns the static row alone
            out.append((pk, None, None, None, [], [], *s))
    return sorted(out, key=_order)


def _order(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return (row[0], -1 if row[1] is None else row[1])


@pytest.mark.parametrize("clustering", ["ASC", "DESC"])
@pytest.mark.parametrize("seed", SEEDS)
def test_the_fold_reads_as_the_database_holds(
    client: CqlClient, seed: int, clustering: str
) -> None:
    name = f"t_{clustering.lower()}_{seed}"
    client.session.execute(
        f"CREATE TABLE {name} ({COLUMNS}, PRIMARY KEY (pk, ck)) "
        f"WITH CLUSTERING ORDER BY (ck {clustering})",
        timeout=60,
    )
    table = TableShape(
        client.session.keyspace, name, ("pk",), ("ck",), KINDS, frozenset({"s"}),
        descending=frozenset({"ck"}) if clustering == "DESC" else frozenset(),
    )  # fmt: skip
    definition = CqlTableSchemas(client).definition(TableRef(table.keyspace, name))
    assert definition is not None
    order = CqlValueOrder(table, definition.cqltypes)  # the database's own type classes
    draw = random.Random(seed)
    now_us = int(time.time()) * 1_000_000
    ttl_times: set[int] = set()
    mutations = [drawn(table, draw, now_us - 10_000_000, ttl_times) for _ in range(MUTATIONS)]
    for mutation in mutations:
        written(client, table, mutation, now_us)
    expected = sorted(database_rows(client, table), key=_order)
    assert folded_rows(table, order, mutations, int(time.time())) == expected
    # folded in another order, then again in the first: the same
    again = random.Random(seed + 100).sample(mutations, len(mutations)) + mutations
    assert folded_rows(table, order, again, int(time.time())) == expected
