"""Tablets CDC: one stream set per table, changed by tablet splits and merges.

Mirrors ``cdc/generation.cc``: creating a CDC table writes its first set to
``system.cdc_streams_state`` (static ``timestamp``, one row per tablet keyed by the
stream's token, ``create_table_streams_mutation``); a resize appends the difference to
``system.cdc_streams_history`` (every old stream closed, every new one opened, since all
get new random bits; ``get_switch_streams_mutation``). Tables are keyed by the *log*
table's id, as ScyllaDB does (its garbage collection looks the base table up from it).
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from cdcgen.core.tablets import StreamSetDiff, StreamState, TabletStreamSet, stream_set_diff
from cdcgen.core.time import truncate_to_millis
from cdcgen.schema import Table
from cdcgen_dev.emulator.cluster import utc_now
from cdcgen_dev.emulator.cql_util import execute, execute_many
from cdcgen_dev.emulator.state import (
    CdcTableRecord,
    EmulatorError,
    GenerationRecord,
    load_cdc_table,
    load_generations,
    save_cdc_table,
    save_generation,
    tablets_scope,
)
from cdcgen_dev.emulator.tablet_map import new_tablet_streams, resize_timestamp

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.schema import SourceSchema
    from cdcgen_dev.emulator.cluster import SandboxCluster


def log_table_id(client: CqlClient, keyspace: str, table: str) -> UUID:
    """The id Cassandra (or ScyllaDB) gave ``keyspace.table`` (``system_schema.tables``)."""
    rows = list(
        client.execute(
            "SELECT id FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
            (keyspace, table),
        )
    )
    if not rows:
        raise EmulatorError(f"table {keyspace}.{table} does not exist")
    table_id: UUID = rows[0].id
    return table_id


def write_base_stream_set(
    client: CqlClient, schema: SourceSchema, table_id: UUID, stream_set: TabletStreamSet
) -> None:
    """``cdc_streams_state``: the static timestamp, then one row per stream token."""
    table = schema.name(Table.CDC_STREAMS_STATE)
    execute(
        client,
        f"INSERT INTO {table} (table_id, timestamp) VALUES (?, ?)",
        (table_id, stream_set.timestamp),
    )
    execute_many(
        client,
        f"INSERT INTO {table} (table_id, last_token, stream_id) VALUES (?, ?, ?)",
        ((table_id, s.token, s.raw) for s in stream_set.streams),
    )


def write_stream_history(
    client: CqlClient,
    schema: SourceSchema,
    table_id: UUID,
    timestamp: datetime,
    diff: StreamSetDiff,
) -> None:
    """``cdc_streams_history``: closed and opened streams at ``timestamp``."""
    rows = [(table_id, timestamp, int(StreamState.CLOSED), s.token, s.raw) for s in diff.closed]
    rows += [(table_id, timestamp, int(StreamState.OPENED), s.token, s.raw) for s in diff.opened]
    execute_many(
        client,
        f"INSERT INTO {schema.name(Table.CDC_STREAMS_HISTORY)} (table_id, timestamp, stream_state, "
        "last_token, stream_id) VALUES (?, ?, ?, ?, ?)",
        rows,
    )


def _record(table: CdcTableRecord, stream_set: TabletStreamSet, event: str) -> GenerationRecord:
    assert table.log_table_id is not None
    return GenerationRecord(
        scope=tablets_scope(table.keyspace, table.table),
        timestamp=stream_set.timestamp,
        id=str(table.log_table_id),
        mode="tablets",
        committed=True,
        loaded=True,
        description_json=json.dumps({"streams": [s.hex for s in stream_set.streams]}),
        faults=(event,),
    )


def start_tablet_streams(
    cluster: SandboxCluster, table: CdcTableRecord, rng: random.Random, now: datetime | None = None
) -> TabletStreamSet:
    """The table's first stream set, operating from now (a new table needs no delay)."""
    if table.tablet_count is None or table.log_table_id is None:
        raise EmulatorError(f"{table.keyspace}.{table.table} is not a tablets table")
    existing = load_generations(
        cluster.client, cluster.schema, tablets_scope(table.keyspace, table.table)
    )
    if existing:
        return existing[0].tablet_streams()
    stamp = truncate_to_millis(utc_now() if now is None else now)
    stream_set = TabletStreamSet(stamp, new_tablet_streams(table.tablet_count, rng))
    write_base_stream_set(cluster.client, cluster.schema, table.log_table_id, stream_set)
    save_generation(cluster.client, cluster.schema, _record(table, stream_set, "created"))
    return stream_set


def tablet_stream_sets(cluster: SandboxCluster, keyspace: str, table: str) -> list[TabletStreamSet]:
    """Every stream set of a table as the emulated nodes know it, oldest first."""
    records = load_generations(cluster.client, cluster.schema, tablets_scope(keyspace, table))
    return [r.tablet_streams() for r in records]


def resize_tablets(
    cluster: SandboxCluster,
    keyspace: str,
    table: str,
    *,
    split: bool,
    seed: int | None = None,
    now: datetime | None = None,
) -> TabletStreamSet:
    """Split every tablet in two (``split``) or merge pairs into one; a new stream set."""
    record = load_cdc_table(cluster.client, cluster.schema, keyspace, table)
    if record.tablet_count is None or record.log_table_id is None:
        raise EmulatorError(f"{keyspace}.{table} does not use tablets")
    if not split and record.tablet_count < 2:
        raise EmulatorError(f"{keyspace}.{table} has one tablet: nothing to merge")
    sets = tablet_stream_sets(cluster, keyspace, table)
    if not sets:
        raise EmulatorError(f"{keyspace}.{table} has no stream set yet")
    previous = sets[-1]
    count = record.tablet_count * 2 if split else record.tablet_count // 2
    rng = random.Random(seed)
    coordinators = cluster.up_nodes()
    clock = (
        cluster.clock(coordinators[0], now) if coordinators else (utc_now() if now is None else now)
    )
    stamp = resize_timestamp(clock, cluster.ring_delay, cluster.leeway, previous.timestamp)
    new_set = TabletStreamSet(stamp, new_tablet_streams(count, rng))
    diff = stream_set_diff(previous.streams, new_set.streams)
    write_stream_history(cluster.client, cluster.schema, record.log_table_id, stamp, diff)
    updated = replace(record, tablet_count=count)
    save_cdc_table(cluster.client, cluster.schema, updated)
    save_generation(
        cluster.client, cluster.schema, _record(updated, new_set, "split" if split else "merge")
    )
    return new_set


def split_tablets(
    cluster: SandboxCluster,
    keyspace: str,
    table: str,
    *,
    seed: int | None = None,
    now: datetime | None = None,
) -> TabletStreamSet:
    """Every tablet splits in two: twice the streams, all new."""
    return resize_tablets(cluster, keyspace, table, split=True, seed=seed, now=now)


def merge_tablets(
    cluster: SandboxCluster,
    keyspace: str,
    table: str,
    *,
    seed: int | None = None,
    now: datetime | None = None,
) -> TabletStreamSet:
    """Pairs of tablets merge: half the streams, all new."""
    return resize_tablets(cluster, keyspace, table, split=False, seed=seed, now=now)
