"""Read committed generations from a ScyllaDB cluster (or the sandbox), in every source mode.

One :class:`~cdcgen.ports.GenerationSource` per way ScyllaDB has stored generations
(design doc section 5), all reading through :class:`~cdcgen.schema.SourceSchema` names so
the same code reads a real cluster and the emulator:

* :class:`RaftGenerationSource`: ``committed_cdc_generations`` (static column of
  ``system.topology``) lists ``(timestamp, data id)``; each id's rows of
  ``system.cdc_generations_v3``;
* :class:`GossipGenerationSource`: the ID the cluster gossips, persisted in
  ``system.cdc_local``, and ``cdc_generation_descriptions_v2`` rows, used only when as
  many rows as ``num_ranges`` are there (a joining node can fail half-way). Only the
  current ID is in the metadata, so the source remembers every ID it has seen (seed it
  with ``known`` after a restart); a V1 ID (no UUID, as left by a 4.3 cluster) is read
  from the V1 table, as ScyllaDB itself does;
* :class:`V1GenerationSource`: ScyllaDB 4.3's published ``cdc_streams_descriptions``
  timestamps and the single-row ``cdc_generation_descriptions``;
* :class:`LegacyGenerationSource`: the 4.3 -> 4.4 rule (:func:`detect_legacy_mode`),
  re-checked on every listing until the switch to V2;
* :class:`TabletsStreamSource`: per CDC log table, ``cdc_streams_state`` plus
  ``cdc_streams_history``; each stream set is a generation (one single-shard range per
  tablet, ending at the stream's token).

``set<blob>`` values come back sorted by bytes, not in shard order; shard order is
recovered per range with :func:`cdcgen.core.topology.order_streams_by_shard`. Anything
that cannot be a valid description raises :class:`~cdcgen.ports.CorruptGeneration`
naming the generation and the problem; a generation still being written raises
:class:`~cdcgen.ports.IncompleteGeneration`. Reads run at the client's metadata
consistency (QUORUM on multi-node clusters).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from cdcgen.core.stream_id import InvalidStreamId, StreamId
from cdcgen.core.tablets import (
    InvalidStreamHistory,
    StreamHistoryRow,
    StreamSetView,
    StreamState,
    TabletStreamSet,
    stream_set_diff,
    stream_set_views,
    stream_sets,
)
from cdcgen.core.timeline import truncate_to_millis
from cdcgen.core.topology import (
    InvalidDescription,
    StreamOrderError,
    TokenRange,
    TopologyDescription,
    order_streams_by_shard,
)
from cdcgen.ports import (
    CorruptGeneration,
    Generation,
    GenerationRef,
    GenerationSource,
    IncompleteGeneration,
    SourceMode,
)
from cdcgen.schema import (
    CDC_GENERATIONS_V3_KEY,
    CDC_LOCAL_KEY,
    CDC_LOCAL_REWRITTEN_KEY,
    TOPOLOGY_KEY,
    SourceSchema,
    Table,
    check_identifier,
)

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig

RawRow = tuple[int, Iterable[bytes], int]
"""``(range_end, streams, ignore_msb)`` as read from any description table."""


# --- shared parsing (pure) ---------------------------------------------------------------


def utc(value: datetime) -> datetime:
    """Driver timestamps are naive UTC; make them aware (milliseconds, as CQL stores them)."""
    aware = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return truncate_to_millis(aware)


def v1_generation_id(timestamp: datetime) -> str:
    """A V1 generation is known by its timestamp alone: its ISO form, milliseconds, UTC."""
    return timestamp.astimezone(UTC).isoformat(timespec="milliseconds")


def generation_label(ref: GenerationRef) -> str:
    return f"generation {ref.timestamp.isoformat(timespec='milliseconds')} ({ref.id})"


def parse_stream(blob: Any, label: str, range_end: int) -> StreamId:
    if not isinstance(blob, bytes | bytearray):
        raise CorruptGeneration(f"{label}: range ending at {range_end} holds a non-blob {blob!r}")
    try:
        return StreamId(bytes(blob))
    except InvalidStreamId as exc:
        raise CorruptGeneration(f"{label}: range ending at {range_end}: {exc}") from exc


def description_from_rows(
    label: str, rows: Iterable[RawRow], *, shard_ordered: bool
) -> TopologyDescription:
    """Build a description from stored rows, validating what the lookup depends on.

    ``shard_ordered`` rows (V1 lists) keep their order; sets (v2, v3) are re-ordered by
    shard from each stream's token. Raises :class:`CorruptGeneration` with ``label``
    and the rows as read (``stored_rows``).
    """
    stored = list(rows)
    try:
        return _description_from_rows(label, stored, shard_ordered=shard_ordered)
    except CorruptGeneration as exc:
        exc.stored_rows = [(r[0], r[1], r[2]) for r in stored]
        raise


def _description_from_rows(
    label: str, rows: list[RawRow], *, shard_ordered: bool
) -> TopologyDescription:
    parsed = []
    for range_end, blobs, ignore_msb in rows:
        if range_end is None or ignore_msb is None or blobs is None:
            raise CorruptGeneration(f"{label}: a range row lacks range_end, streams or ignore_msb")
        streams = [parse_stream(b, label, range_end) for b in blobs]
        parsed.append((int(range_end), streams, int(ignore_msb)))
    if not parsed:
        raise CorruptGeneration(f"{label}: the description has no ranges")
    parsed.sort(key=lambda r: r[0])
    entries = []
    for i, (range_end, streams, ignore_msb) in enumerate(parsed):
        if not streams:
            raise CorruptGeneration(f"{label}: range ending at {range_end} has no streams")
        if not shard_ordered:
            start = parsed[i - 1][0]  # entry 0 wraps around from the last range end
            try:
                ordered = order_streams_by_shard(start, range_end, streams, ignore_msb)
            except StreamOrderError as exc:
                raise CorruptGeneration(
                    f"{label}: streams of range ({start}, {range_end}] do not match its "
                    f"{len(streams)} shards (a missing, duplicated or misplaced stream, or a "
                    f"gap in the ring): {exc}"
                ) from exc
            except ValueError as exc:
                raise CorruptGeneration(f"{label}: range ending at {range_end}: {exc}") from exc
        else:
            ordered = tuple(streams)
        try:
            entries.append(TokenRange(range_end, tuple(ordered), ignore_msb))
        except InvalidDescription as exc:
            raise CorruptGeneration(f"{label}: {exc}") from exc
    try:
        return TopologyDescription(tuple(entries))
    except InvalidDescription as exc:
        raise CorruptGeneration(f"{label}: {exc}") from exc


def tablets_description(stream_set: TabletStreamSet) -> TopologyDescription:
    """A tablets stream set as a description: one single-shard range per tablet.

    Range ``i`` ends at stream ``i``'s token (the tablet's last token), so the vnode
    lookup (first range end >= token) gives exactly ``get_tablet_stream``.
    """
    return TopologyDescription(tuple(TokenRange(s.token, (s,), 0) for s in stream_set.streams))


# --- raft ---------------------------------------------------------------------------------


class RaftGenerationSource:
    """Generations of a cluster with raft-based topology (``cdc_generations_v3``)."""

    def __init__(self, client: CqlClient, schema: SourceSchema) -> None:
        self.client = client
        self.schema = schema

    def committed(self) -> list[tuple[datetime, UUID]]:
        rows = list(
            self.client.execute(
                f"SELECT committed_cdc_generations FROM {self.schema.name(Table.TOPOLOGY)} "
                "WHERE key = %s LIMIT 1",
                (TOPOLOGY_KEY,),
            )
        )
        if not rows or not rows[0].committed_cdc_generations:
            return []
        return sorted((utc(ts), data_id) for ts, data_id in rows[0].committed_cdc_generations)

    def list_generations(self) -> list[GenerationRef]:
        return [GenerationRef(ts, str(data_id)) for ts, data_id in self.committed()]

    def read_generation(self, ref: GenerationRef) -> Generation:
        label = generation_label(ref)
        data_id = _uuid(ref, label)
        rows = list(
            self.client.execute(
                f"SELECT range_end, streams, ignore_msb FROM "
                f"{self.schema.name(Table.CDC_GENERATIONS_V3)} WHERE key = %s AND id = %s",
                (CDC_GENERATIONS_V3_KEY, data_id),
            )
        )
        if not rows:
            raise CorruptGeneration(
                f"{label}: committed, but cdc_generations_v3 has no rows for its data id"
            )
        raw = [(r.range_end, r.streams, r.ignore_msb) for r in rows]
        return Generation(ref, description_from_rows(label, raw, shard_ordered=False))


def _uuid(ref: GenerationRef, label: str) -> UUID:
    try:
        return UUID(ref.id)
    except ValueError:
        raise CorruptGeneration(f"{label}: id {ref.id!r} is not a UUID") from None


# --- legacy V1 ------------------------------------------------------------------------------


class V1GenerationSource:
    """ScyllaDB 4.3 generations: published timestamps, single-row descriptions."""

    def __init__(self, client: CqlClient, schema: SourceSchema) -> None:
        self.client = client
        self.schema = schema

    def published(self) -> dict[datetime, frozenset[bytes] | None]:
        """Published timestamps and their stream sets (``cdc_streams_descriptions``)."""
        rows = self.client.execute(
            f"SELECT time, streams FROM {self.schema.name(Table.CDC_STREAMS_DESCRIPTIONS_V1)}"
        )
        return {
            utc(r.time): frozenset(bytes(s) for s in r.streams) if r.streams is not None else None
            for r in rows
        }

    def list_generations(self) -> list[GenerationRef]:
        return [GenerationRef(ts, v1_generation_id(ts)) for ts in sorted(self.published())]

    def read_generation(self, ref: GenerationRef) -> Generation:
        label = generation_label(ref)
        rows = list(
            self.client.execute(
                f"SELECT description FROM {self.schema.name(Table.CDC_GENERATION_DESCRIPTIONS_V1)} "
                "WHERE time = %s",
                (ref.timestamp,),
            )
        )
        if not rows or rows[0].description is None:
            raise IncompleteGeneration(
                f"{label}: cdc_generation_descriptions has no row for it yet"
            )
        try:
            raw = [(end, list(streams), ignore) for end, streams, ignore in rows[0].description]
        except (TypeError, ValueError) as exc:
            raise CorruptGeneration(f"{label}: malformed description: {exc}") from exc
        description = description_from_rows(label, raw, shard_ordered=True)
        published = self._published_streams(ref.timestamp)
        if published is not None:
            described = frozenset(s.raw for s in description.streams())
            if published != described:
                raise CorruptGeneration(
                    f"{label}: cdc_streams_descriptions lists {len(published)} streams, the "
                    f"description {len(described)}; {len(published ^ described)} differ"
                )
        return Generation(ref, description)

    def _published_streams(self, timestamp: datetime) -> frozenset[bytes] | None:
        rows = list(
            self.client.execute(
                f"SELECT streams FROM {self.schema.name(Table.CDC_STREAMS_DESCRIPTIONS_V1)} "
                "WHERE time = %s",
                (timestamp,),
            )
        )
        if not rows or rows[0].streams is None:
            return None
        return frozenset(bytes(s) for s in rows[0].streams)


# --- gossip -------------------------------------------------------------------------------


class GossipGenerationSource:
    """Generations of a gossip-based cluster: the gossiped ID plus v2 descriptions."""

    def __init__(
        self, client: CqlClient, schema: SourceSchema, known: Iterable[GenerationRef] = ()
    ) -> None:
        self.client = client
        self.schema = schema
        self._seen: set[GenerationRef] = set(known)
        self._v1 = V1GenerationSource(client, schema)

    def current(self) -> GenerationRef | None:
        """The generation ID in ``cdc_local`` (a V1 ID when ``uuid`` is null)."""
        rows = list(
            self.client.execute(
                f"SELECT streams_timestamp, uuid FROM {self.schema.name(Table.CDC_LOCAL)} "
                "WHERE key = %s",
                (CDC_LOCAL_KEY,),
            )
        )
        if not rows or rows[0].streams_timestamp is None:
            return None
        stamp = utc(rows[0].streams_timestamp)
        ident = str(rows[0].uuid) if rows[0].uuid is not None else v1_generation_id(stamp)
        return GenerationRef(stamp, ident)

    def list_generations(self) -> list[GenerationRef]:
        """V1 generations left by a 4.3 cluster, every ID seen so far, and the current one."""
        current = self.current()
        if current is not None:
            self._seen.add(current)
        refs = set(self._seen)
        if _v1_tables_exist(self.client, self.schema):
            refs.update(self._v1.list_generations())
        return sorted(refs)

    def read_generation(self, ref: GenerationRef) -> Generation:
        if _is_v1_ref(ref):
            return self._v1.read_generation(ref)
        label = generation_label(ref)
        rows = list(
            self.client.execute(
                f"SELECT range_end, streams, ignore_msb, num_ranges FROM "
                f"{self.schema.name(Table.CDC_GENERATION_DESCRIPTIONS_V2)} WHERE id = %s",
                (_uuid(ref, label),),
            )
        )
        num_ranges = rows[0].num_ranges if rows else None
        ranges = [r for r in rows if r.range_end is not None]
        if num_ranges is None:
            raise IncompleteGeneration(f"{label}: num_ranges is not written yet")
        if len(ranges) != num_ranges:
            raise IncompleteGeneration(
                f"{label}: {len(ranges)} of {num_ranges} description rows written so far"
            )
        raw = [(r.range_end, r.streams, r.ignore_msb) for r in ranges]
        return Generation(ref, description_from_rows(label, raw, shard_ordered=False))


def _is_v1_ref(ref: GenerationRef) -> bool:
    try:
        UUID(ref.id)
    except ValueError:
        return True
    return False


def _table_exists(client: CqlClient, physical_name: str) -> bool:
    keyspace, table = physical_name.split(".", 1)
    rows = client.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
        (keyspace, table),
    )
    return bool(list(rows))


def _v1_tables_exist(client: CqlClient, schema: SourceSchema) -> bool:
    return _table_exists(client, schema.name(Table.CDC_STREAMS_DESCRIPTIONS_V1))


def detect_legacy_mode(client: CqlClient, schema: SourceSchema) -> SourceMode:
    """The 4.3 -> 4.4 rule: ``GOSSIP`` (the V2 tables) or still ``V1``.

    No V1 streams table: V2. A ``key = 'rewritten'`` row in ``cdc_local``: V2 (the
    rewrite finished). Otherwise V1, and the caller must ask again later.
    """
    if not _v1_tables_exist(client, schema):
        return SourceMode.GOSSIP
    rows = client.execute(
        f"SELECT key FROM {schema.name(Table.CDC_LOCAL)} WHERE key = %s",
        (CDC_LOCAL_REWRITTEN_KEY,),
    )
    return SourceMode.GOSSIP if list(rows) else SourceMode.V1


class LegacyGenerationSource:
    """A cluster coming from ScyllaDB 4.3: V1 until the switch rule says V2, then gossip.

    The switch is checked on every :meth:`list_generations` and, once made, kept.
    """

    def __init__(
        self, client: CqlClient, schema: SourceSchema, known: Iterable[GenerationRef] = ()
    ) -> None:
        self.client = client
        self.schema = schema
        self.v1 = V1GenerationSource(client, schema)
        self.gossip = GossipGenerationSource(client, schema, known)
        self.mode = SourceMode.V1

    def list_generations(self) -> list[GenerationRef]:
        if self.mode is SourceMode.V1:
            self.mode = detect_legacy_mode(self.client, self.schema)
        if self.mode is SourceMode.V1:
            return self.v1.list_generations()
        return self.gossip.list_generations()

    def read_generation(self, ref: GenerationRef) -> Generation:
        return self.gossip.read_generation(ref)


# --- tablets --------------------------------------------------------------------------------


class TabletsStreamSource:
    """Stream sets of tablets-based CDC tables; each set is one generation.

    ``tables`` restricts it to some base tables (``"keyspace.table"``); by default every
    table with a row in ``cdc_streams_state``. A :class:`GenerationRef`'s ``id`` is the
    log table's id (the key ScyllaDB stores the streams under).
    """

    def __init__(
        self, client: CqlClient, schema: SourceSchema, tables: Sequence[str] | None = None
    ) -> None:
        self.client = client
        self.schema = schema
        self.tables = tuple(tables) if tables is not None else None

    def table_ids(self) -> dict[UUID, str]:
        """Log table id -> ``"keyspace.table"`` of the base table."""
        if self.tables is not None:
            result = {}
            for name in self.tables:
                keyspace, _, table = name.partition(".")
                check_identifier(keyspace, "keyspace")
                check_identifier(table, "table")
                log_table = f"{table}_scylla_cdc_log"
                rows = list(
                    self.client.execute(
                        "SELECT id FROM system_schema.tables WHERE keyspace_name = %s "
                        "AND table_name = %s",
                        (keyspace, log_table),
                    )
                )
                if not rows:
                    raise CorruptGeneration(
                        f"table {name}: its CDC log table {log_table} is missing"
                    )
                result[rows[0].id] = name
            return result
        ids = {
            r.table_id
            for r in self.client.execute(
                f"SELECT DISTINCT table_id FROM {self.schema.name(Table.CDC_STREAMS_STATE)}"
            )
        }
        names = {
            r.id: f"{r.keyspace_name}.{r.table_name.removesuffix('_scylla_cdc_log')}"
            for r in self.client.execute(
                "SELECT keyspace_name, table_name, id FROM system_schema.tables"
            )
            if r.id in ids
        }
        return {table_id: names.get(table_id, str(table_id)) for table_id in ids}

    def stream_sets(self, table_id: UUID) -> tuple[TabletStreamSet, ...]:
        """Every stream set of one table, oldest first (base set, then history diffs)."""
        label = f"tablets table {table_id}"
        state = list(
            self.client.execute(
                f"SELECT timestamp, last_token, stream_id FROM "
                f"{self.schema.name(Table.CDC_STREAMS_STATE)} WHERE table_id = %s",
                (table_id,),
            )
        )
        if not state:
            return ()
        if state[0].timestamp is None:
            raise IncompleteGeneration(f"{label}: cdc_streams_state has streams but no timestamp")
        try:
            base = TabletStreamSet.from_state_rows(
                utc(state[0].timestamp),
                {
                    r.last_token: parse_stream(r.stream_id, label, r.last_token)
                    for r in state
                    if r.last_token is not None
                },
            )
            history = [
                StreamHistoryRow(
                    utc(r.timestamp),
                    StreamState.from_value(r.stream_state),
                    r.last_token,
                    parse_stream(r.stream_id, label, r.last_token),
                )
                for r in self.client.execute(
                    f"SELECT timestamp, stream_state, last_token, stream_id FROM "
                    f"{self.schema.name(Table.CDC_STREAMS_HISTORY)} WHERE table_id = %s",
                    (table_id,),
                )
            ]
            return stream_sets(base, history)
        except (InvalidStreamHistory, InvalidStreamId) as exc:
            raise CorruptGeneration(f"{label}: {exc}") from exc

    def views(self, table_id: UUID) -> tuple[StreamSetView, ...]:
        """What ``system.cdc_streams`` shows for the table (current/closed/opened)."""
        sets = self.stream_sets(table_id)
        if not sets:
            return ()
        return stream_set_views(sets[0], _history_from_sets(sets))

    def list_generations(self) -> list[GenerationRef]:
        refs = [
            GenerationRef(stream_set.timestamp, str(table_id))
            for table_id in self.table_ids()
            for stream_set in self.stream_sets(table_id)
        ]
        return sorted(refs)

    def read_generation(self, ref: GenerationRef) -> Generation:
        label = generation_label(ref)
        for stream_set in self.stream_sets(_uuid(ref, label)):
            if stream_set.timestamp == ref.timestamp:
                try:
                    return Generation(ref, tablets_description(stream_set))
                except InvalidDescription as exc:
                    raise CorruptGeneration(f"{label}: {exc}") from exc
        raise CorruptGeneration(f"{label}: no stream set of this table starts at that time")


def _history_from_sets(sets: Sequence[TabletStreamSet]) -> list[StreamHistoryRow]:
    rows = []
    for previous, current in itertools.pairwise(sets):
        diff = stream_set_diff(previous.streams, current.streams)
        rows += [
            StreamHistoryRow(current.timestamp, StreamState.CLOSED, s.token, s) for s in diff.closed
        ]
        rows += [
            StreamHistoryRow(current.timestamp, StreamState.OPENED, s.token, s) for s in diff.opened
        ]
    return rows


# --- factory --------------------------------------------------------------------------------


def source_for(client: CqlClient, config: PipelineConfig) -> GenerationSource:
    """The generation source for ``config.source_mode`` under ``config.source_schema``.

    ``v1`` returns the upgrade-aware :class:`LegacyGenerationSource`. For ``tablets``,
    ``config.extra["cdc_tables"]`` (comma-separated ``keyspace.table``) limits the tables.
    """
    schema = config.source_schema
    mode = SourceMode(config.source_mode)
    if mode is SourceMode.RAFT:
        return RaftGenerationSource(client, schema)
    if mode is SourceMode.GOSSIP:
        return GossipGenerationSource(client, schema)
    if mode is SourceMode.V1:
        return LegacyGenerationSource(client, schema)
    tables_text = config.extra.get("cdc_tables", "")
    tables = [t.strip() for t in tables_text.split(",") if t.strip()] or None
    return TabletsStreamSource(client, schema, tables)
