"""The floor of the generation benchmark: the same rows, moved by cassandra-driver alone.

Reading a generation's ``cdc_generations_v3`` rows and writing its
``cdc_streams_descriptions_v2`` rows is the I/O no design can avoid; everything else the
pipeline does (Spark, validation, reports) is measured against it. Both sides run at
their best concurrency, found by trying a few (the best of each is kept): the reads
split the generation's single partition into clustering slices read concurrently, the
writes are single-row inserts or unlogged single-partition batches in flight together
(all the rows share one partition, as they do in the published table), into a scratch
table of that schema.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np

from cdcgen.adapters.cql import CqlClient
from cdcgen.schema import CDC_GENERATIONS_V3_KEY, SourceSchema, Table

READ_SLICES = (1, 4, 16)
#: (rows per unlogged batch, 1 = plain inserts; statements in flight)
WRITE_SHAPES = ((1, 128), (50, 16), (200, 8))


@dataclass(frozen=True)
class Floor:
    read_seconds: float
    write_seconds: float
    rows: int
    streams: int
    read_slices: int
    write_shape: tuple[int, int]

    @property
    def seconds(self) -> float:
        return round(self.read_seconds + self.write_seconds, 3)

    def to_json(self) -> dict[str, Any]:
        return {
            "floor_read_seconds": round(self.read_seconds, 3),
            "floor_write_seconds": round(self.write_seconds, 3),
            "floor_read_slices": self.read_slices,
            "floor_write_rows_per_batch": self.write_shape[0],
            "floor_write_in_flight": self.write_shape[1],
        }


def _read(
    client: CqlClient, schema: SourceSchema, data_id: UUID, bounds: Sequence[int]
) -> list[Any]:
    from cassandra.concurrent import execute_concurrent_with_args

    statement = client.session.prepare(
        f"SELECT range_end, streams, ignore_msb FROM {schema.name(Table.CDC_GENERATIONS_V3)} "
        "WHERE key = ? AND id = ? AND range_end >= ? AND range_end < ?"
    )
    statement.fetch_size = 5000
    params = [
        (CDC_GENERATIONS_V3_KEY, data_id, bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)
    ]
    rows: list[Any] = []
    for outcome in execute_concurrent_with_args(
        client.session, statement, params, concurrency=len(params), results_generator=False
    ):
        if not outcome.success:
            raise RuntimeError(f"floor read failed: {outcome.result_or_exc}")
        rows.extend(outcome.result_or_exc)
    return rows


def _slices(range_ends: np.ndarray[Any, Any], slices: int) -> list[int]:
    """``slices`` clustering bounds with equally many rows between each pair."""
    picks = np.linspace(0, len(range_ends), slices + 1).astype(int)[1:-1]
    inner = [int(range_ends[i]) for i in picks]
    return [-(2**63), *inner, 2**63 - 1]


def measure_floor(
    client: CqlClient,
    schema: SourceSchema,
    data_id: UUID,
    range_ends: np.ndarray[Any, Any],
    scratch_keyspace: str,
    when: datetime,
) -> Floor:
    """Best read time over :data:`READ_SLICES`, best write time over
    :data:`WRITE_SHAPES`; the rows read are the rows written."""
    from cassandra.concurrent import execute_concurrent

    best_read, best_slices, rows = float("inf"), 0, []
    for slices in READ_SLICES:
        started = time.perf_counter()
        rows = _read(client, schema, data_id, _slices(range_ends, slices))
        elapsed = time.perf_counter() - started
        if elapsed < best_read:
            best_read, best_slices = elapsed, slices
    streams = sum(len(row.streams) for row in rows)
    session = client.session
    session.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {scratch_keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    best_write, best_shape = float("inf"), WRITE_SHAPES[0]
    for per_batch, in_flight in WRITE_SHAPES:
        table = f"{scratch_keyspace}.streams_{per_batch}_{in_flight}"
        session.execute(
            f"CREATE TABLE IF NOT EXISTS {table} (time timestamp, range_end bigint, "
            "streams frozen<set<blob>>, PRIMARY KEY ((time), range_end)) "
            "WITH CLUSTERING ORDER BY (range_end ASC)"
        )
        insert = session.prepare(f"INSERT INTO {table} (time, range_end, streams) VALUES (?, ?, ?)")
        started = time.perf_counter()
        statements = [
            (_batch(insert, when, rows[i : i + per_batch]), ())
            for i in range(0, len(rows), per_batch)
        ]
        execute_concurrent(session, statements, concurrency=in_flight, raise_on_first_error=True)
        elapsed = time.perf_counter() - started
        if elapsed < best_write:
            best_write, best_shape = elapsed, (per_batch, in_flight)
    return Floor(best_read, best_write, len(rows), streams, best_slices, best_shape)


def _batch(insert: Any, when: datetime, rows: Sequence[Any]) -> Any:
    from cassandra.query import BatchStatement, BatchType

    if len(rows) == 1:
        return insert.bind((when, rows[0].range_end, rows[0].streams))
    batch = BatchStatement(batch_type=BatchType.UNLOGGED)
    for row in rows:
        batch.add(insert, (when, row.range_end, row.streams))
    return batch
