"""The description publisher against a real Cassandra (``cassandra_single``).

Each test publishes under its own target keyspace, and reads back with plain CQL what a
CDC client would read: streams only once the timestamp row is there, the same rows on
every re-run, never an overwrite with different streams.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cdcgen.adapters.cql import CqlClient
from cdcgen.adapters.errors import PublishConflict, PublishError
from cdcgen.adapters.expiry import expire_superseded, prune_descriptions
from cdcgen.adapters.publisher import CqlDescriptionPublisher, rows_of
from cdcgen.adapters.tablet_publisher import TabletsPublisher
from cdcgen.adapters.v1_rewrite import rewrite_v1
from cdcgen.core.cdc_log import CdcTable, TableRef
from cdcgen.core.retention import CLOCK_DRIFT
from cdcgen.core.tablets import (
    StreamHistoryRow,
    StreamState,
    TabletStreamSet,
    stream_set_views,
    tablet_stream_id,
)
from cdcgen.core.topology import Node, TopologyDescription, make_generation
from cdcgen.schema import (
    CDC_LOCAL_REWRITTEN_KEY,
    GENERATION_TIMESTAMPS_KEY,
    SourceSchema,
    Table,
    create_table_cql,
)

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


def _generation(seed: int, shards: int = 4, vnodes: int = 4, nodes: int = 3) -> TopologyDescription:
    rng = random.Random(seed)
    ring = [
        Node(f"n{i}", shards, 12, tuple(rng.randrange(-(2**63), 2**63) for _ in range(vnodes)))
        for i in range(nodes)
    ]
    return make_generation(ring, random.Random(seed + 1000))


def _streams_table(client: CqlClient, keyspace: str, when: datetime) -> dict[int, frozenset[bytes]]:
    rows = client.session.execute(
        f"SELECT range_end, streams FROM {keyspace}.cdc_streams_descriptions_v2 WHERE time = %s",
        (when,),
    )
    return {r.range_end: frozenset(r.streams) for r in rows}


def _expected(description: TopologyDescription) -> dict[int, frozenset[bytes]]:
    return {end: frozenset(streams) for end, streams in rows_of(description)}


def test_publish_writes_streams_then_timestamp_and_is_idempotent(
    client: CqlClient, target_keyspace: str
) -> None:
    description = _generation(1)
    publisher = CqlDescriptionPublisher(client, keyspace=target_keyspace)
    assert publisher.published_timestamps() == set()
    assert publisher.publish(T0, description) == len(description.entries)
    assert publisher.published_timestamps() == {T0}
    assert _streams_table(client, target_keyspace, T0) == _expected(description)
    assert publisher.publish(T0, description) == len(description.entries)  # again: no-op
    assert _streams_table(client, target_keyspace, T0) == _expected(description)
    timestamps = list(
        client.session.execute(f"SELECT key, time FROM {target_keyspace}.cdc_generation_timestamps")
    )
    assert [(r.key, r.time.replace(tzinfo=UTC)) for r in timestamps] == [("timestamps", T0)]


def test_different_streams_for_a_published_generation_are_refused(
    client: CqlClient, target_keyspace: str
) -> None:
    publisher = CqlDescriptionPublisher(client, keyspace=target_keyspace)
    original = _generation(1)
    publisher.publish(T0, original)
    with pytest.raises(PublishConflict, match="refusing to overwrite"):
        publisher.publish(T0, _generation(1, shards=5))  # same ring size, other streams
    assert _streams_table(client, target_keyspace, T0) == _expected(original)


def test_a_generation_without_description_rows_is_never_published(
    client: CqlClient, target_keyspace: str
) -> None:
    publisher = CqlDescriptionPublisher(client, keyspace=target_keyspace)
    for rows in ([], [(1, [])]):
        with pytest.raises(PublishError, match=re.escape(T0.isoformat()) + ".*no stream"):
            publisher.publish_rows(T0, rows)
    assert publisher.published_timestamps() == set()
    assert _streams_table(client, target_keyspace, T0) == {}


class Crash(Exception):
    """The process dies here."""


class CrashingBeforeTheTimestamp(CqlDescriptionPublisher):
    """The publisher, dying after every streams row and before the timestamp row."""

    def write_timestamp(self, timestamp: datetime) -> None:
        raise Crash(f"crash before the timestamp row of {timestamp}")


def test_a_crash_between_streams_and_timestamp_hides_the_generation_until_rerun(
    client: CqlClient, target_keyspace: str
) -> None:
    description = _generation(2)
    crashing = CrashingBeforeTheTimestamp(client, keyspace=target_keyspace)
    with pytest.raises(Crash):
        crashing.publish(T0, description)
    # A client polls the timestamps table: nothing to see, though every row is there.
    assert crashing.published_timestamps() == set()
    assert _streams_table(client, target_keyspace, T0) == _expected(description)
    with pytest.raises(Crash):  # a second crash at the same point changes nothing
        crashing.publish(T0, description)
    assert crashing.published_timestamps() == set()

    rerun = CqlDescriptionPublisher(client, keyspace=target_keyspace)
    rerun.publish(T0, description)
    assert rerun.published_timestamps() == {T0}
    assert _streams_table(client, target_keyspace, T0) == _expected(description)


def test_a_partial_write_is_completed_with_identical_rows(
    client: CqlClient, target_keyspace: str
) -> None:
    description = _generation(3)
    publisher = CqlDescriptionPublisher(client, keyspace=target_keyspace)
    rows = rows_of(description)
    publisher.ensure_tables()
    publisher._write_stream_batches(T0, rows[: len(rows) // 2])  # a crash mid-way
    assert publisher.published_timestamps() == set()
    publisher.publish(T0, description)
    assert _streams_table(client, target_keyspace, T0) == _expected(description)


def test_large_generations_go_in_megabyte_single_partition_batches(
    client: CqlClient, target_keyspace: str
) -> None:
    # 2 nodes x 128 vnodes x 64 shards = 16,384 streams in ~17 batches of ~1 MB each.
    description = _generation(4, shards=64, vnodes=128, nodes=2)
    publisher = CqlDescriptionPublisher(client, keyspace=target_keyspace, concurrency=20)
    assert publisher.publish(T0, description) == 256
    published = _streams_table(client, target_keyspace, T0)
    assert published == _expected(description)
    assert sum(len(s) for s in published.values()) == 16_384


def test_expire_marks_superseded_generations_past_every_ttl(
    client: CqlClient, target_keyspace: str
) -> None:
    publisher = CqlDescriptionPublisher(client, keyspace=target_keyspace)
    stamps = [T0, T0 + timedelta(hours=1), T0 + timedelta(hours=2)]
    for i, stamp in enumerate(stamps):
        publisher.publish(stamp, _generation(10 + i, vnodes=1, nodes=1))
    tables = [CdcTable(TableRef("ks", "orders"), 3600), CdcTable(TableRef("ks", "users"), 1800)]
    now = stamps[2] + timedelta(hours=1) + CLOCK_DRIFT
    marked = expire_superseded(publisher, tables, now=now)
    assert [(m.timestamp, m.expired) for m in marked] == [
        (stamps[0], stamps[1] + timedelta(hours=1) + CLOCK_DRIFT),
        (stamps[1], stamps[2] + timedelta(hours=1) + CLOCK_DRIFT),
    ]
    state = {g.time: g.expired for g in publisher.published_generations()}
    assert state[stamps[2]] is None  # the newest is never expired
    assert state[stamps[0]] == marked[0].expired
    assert expire_superseded(publisher, tables, now=now + timedelta(days=1)) == []  # set once
    assert publisher.publish(stamps[0], _generation(10, vnodes=1, nodes=1))  # re-publish keeps it
    assert {g.time: g.expired for g in publisher.published_generations()} == state


def test_pruning_deletes_long_expired_descriptions_timestamp_first(
    client: CqlClient, target_keyspace: str
) -> None:
    publisher = CqlDescriptionPublisher(client, keyspace=target_keyspace)
    stamps = [T0 + timedelta(hours=h) for h in range(4)]
    for i, stamp in enumerate(stamps):
        publisher.publish(stamp, _generation(20 + i, vnodes=1, nodes=1))
    tables = [CdcTable(TableRef("ks", "orders"), 3600)]
    now = stamps[3] + timedelta(hours=2)
    expire_superseded(publisher, tables, now=now)  # the first three expire
    # A consumer still reads the second generation: it and its successors stay.
    kept_for_consumer = prune_descriptions(
        publisher, timedelta(0), needed_from=stamps[1] + timedelta(minutes=5), now=now
    )
    assert kept_for_consumer == [stamps[0]]
    assert [g.time for g in publisher.published_generations()] == stamps[1:]
    assert _streams_table(client, target_keyspace, stamps[0]) == {}
    # A prune killed between its two deletes left the second's streams behind; a
    # publication in progress has written the streams of a new one, not its timestamp.
    client.session.execute(
        f"DELETE FROM {target_keyspace}.cdc_generation_timestamps WHERE key = %s AND time = %s",
        (GENERATION_TIMESTAMPS_KEY, stamps[1]),
    )
    in_progress = stamps[3] + timedelta(hours=1)
    publisher.write_streams(in_progress, rows_of(_generation(30, vnodes=1, nodes=1)))
    deleted = prune_descriptions(publisher, timedelta(0), now=now)
    assert deleted == [stamps[1], stamps[2]]  # the orphan, then the expired one
    assert [g.time for g in publisher.published_generations()] == [stamps[3]]  # the newest
    assert _streams_table(client, target_keyspace, stamps[3]) != {}
    assert _streams_table(client, target_keyspace, in_progress) != {}, "an unpublished one is kept"
    assert prune_descriptions(publisher, timedelta(0), now=now) == []


def test_tablets_views_publish_current_closed_and_opened_streams(
    client: CqlClient, target_keyspace: str
) -> None:
    rng = random.Random(5)
    base = TabletStreamSet(T0, tuple(tablet_stream_id(t, rng) for t in (-100, 0, 100)))
    split = tablet_stream_id(-50, rng)
    replaced = tablet_stream_id(-100, rng)
    history = [
        StreamHistoryRow(T0 + timedelta(minutes=1), StreamState.OPENED, -50, split),
        StreamHistoryRow(T0 + timedelta(minutes=2), StreamState.CLOSED, -100, base.streams[0]),
        StreamHistoryRow(T0 + timedelta(minutes=2), StreamState.OPENED, -100, replaced),
    ]
    views = stream_set_views(base, history)
    publisher = TabletsPublisher(client, keyspace=target_keyspace)
    written = publisher.publish_tablet_streams("shop", "orders", views)
    assert written == sum(len(v.rows()) for v in views)
    assert publisher.published_tablet_timestamps("shop", "orders") == [v.timestamp for v in views]
    rows = client.session.execute(
        f"SELECT timestamp, stream_state, stream_id FROM {target_keyspace}.cdc_streams "
        "WHERE keyspace_name = 'shop' AND table_name = 'orders'"
    )
    got = sorted(
        (r.timestamp.replace(tzinfo=UTC), r.stream_state, bytes(r.stream_id)) for r in rows
    )
    want = sorted((t, int(s), sid.raw) for v in views for t, s, sid in v.rows())
    assert got == want
    last = {(s, b) for t, s, b in got if t == views[-1].timestamp}
    assert (int(StreamState.CLOSED), base.streams[0].raw) in last
    assert (int(StreamState.OPENED), replaced.raw) in last
    assert publisher.publish_tablet_streams("shop", "orders", views) == written  # idempotent
    other = stream_set_views(TabletStreamSet(T0, (tablet_stream_id(7, rng),)), [])
    with pytest.raises(PublishConflict):
        publisher.publish_tablet_streams("shop", "orders", other)


def test_system_distributed_is_never_created_and_tablets_views_need_a_target(
    client: CqlClient,
) -> None:
    publisher = TabletsPublisher(client, keyspace="system_distributed")
    assert not publisher.owns_schema
    publisher.ensure_tables()  # a no-op: ScyllaDB owns these tables
    tables = client.session.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'system_distributed'"
    )
    assert "cdc_streams_descriptions_v2" not in {r.table_name for r in tables}
    with pytest.raises(PublishError, match="virtual tables"):
        publisher.publish_tablet_streams("ks", "t", [])


# --- V1 -> V2 rewrite ---------------------------------------------------------------------


@pytest.fixture
def v1_source(client: CqlClient) -> Iterator[SourceSchema]:
    schema = SourceSchema(f"v1{uuid.uuid4().hex[:6]}_")
    tables = [
        Table.CDC_STREAMS_DESCRIPTIONS_V1,
        Table.CDC_GENERATION_DESCRIPTIONS_V1,
        Table.CDC_LOCAL,
    ]
    for keyspace in sorted({schema.keyspace(t) for t in tables}):
        client.session.execute(
            f"CREATE KEYSPACE {keyspace} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
    for table in tables:
        client.session.execute(create_table_cql(table, schema.name(table)))
    yield schema
    for keyspace in sorted({schema.keyspace(t) for t in tables}):
        client.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")


def _write_v1(
    client: CqlClient, schema: SourceSchema, when: datetime, desc: TopologyDescription
) -> None:
    description: list[Any] = [
        (e.range_end, [s.raw for s in e.streams], e.sharding_ignore_msb) for e in desc.entries
    ]
    # Prepared: a simple statement would render the tuples as lists.
    insert_description = client.session.prepare(
        f"INSERT INTO {schema.name(Table.CDC_GENERATION_DESCRIPTIONS_V1)} (time, description) "
        "VALUES (?, ?)"
    )
    client.session.execute(insert_description, (when, description))
    insert_streams = client.session.prepare(
        f"INSERT INTO {schema.name(Table.CDC_STREAMS_DESCRIPTIONS_V1)} (time, streams) "
        "VALUES (?, ?)"
    )
    client.session.execute(insert_streams, (when, {s.raw for s in desc.streams()}))


def test_rewrite_copies_recent_v1_generations_then_writes_the_marker(
    client: CqlClient, target_keyspace: str, v1_source: SourceSchema
) -> None:
    now = T0 + timedelta(days=10)
    stamps = [T0 + timedelta(days=d) for d in (0, 1, 8, 9)]
    generations = {stamp: _generation(20 + i) for i, stamp in enumerate(stamps)}
    for stamp, desc in generations.items():
        _write_v1(client, v1_source, stamp, desc)
    publisher = CqlDescriptionPublisher(client, keyspace=target_keyspace)
    publisher.publish(stamps[3], generations[stamps[3]])  # a node already copied this one
    tables = [CdcTable(TableRef("shop", "orders"), 2 * 86400)]
    report = rewrite_v1(client, v1_source, publisher, tables, now)
    # Rows may exist from now - 2 days - 10 s = T0 + 8 days - 10 s: the generation of
    # day 1 (operating until day 8) may hold some, the one of day 0 cannot.
    assert report.status == "rewritten" and report.marker_written
    assert report.too_old == [stamps[0]]
    assert report.rewritten == [stamps[1], stamps[2]]
    assert report.already_present == [stamps[3]]
    assert publisher.published_timestamps() == set(stamps[1:])
    for stamp in stamps[1:]:
        assert _streams_table(client, target_keyspace, stamp) == _expected(generations[stamp])
    marker = list(
        client.session.execute(
            f"SELECT key, streams_timestamp FROM {v1_source.name(Table.CDC_LOCAL)} WHERE key = %s",
            (CDC_LOCAL_REWRITTEN_KEY,),
        )
    )
    assert marker[0].streams_timestamp.replace(tzinfo=UTC) == stamps[3]
    again = rewrite_v1(client, v1_source, publisher, tables, now)
    assert again.status == "already rewritten"


def test_rewrite_without_cdc_tables_only_writes_the_marker(
    client: CqlClient, target_keyspace: str, v1_source: SourceSchema
) -> None:
    _write_v1(client, v1_source, T0, _generation(30))
    publisher = CqlDescriptionPublisher(client, keyspace=target_keyspace)
    report = rewrite_v1(client, v1_source, publisher, [], T0 + timedelta(days=1))
    assert report.status == "no CDC table: marker only" and report.rewritten == []
    assert publisher.published_timestamps() == set()
    missing = rewrite_v1(client, SourceSchema("nov1_"), publisher, [], T0)
    assert missing.status.startswith("no V1 streams table")
