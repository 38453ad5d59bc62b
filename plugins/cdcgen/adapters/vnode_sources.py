"""Committed generations of a vnodes cluster, in every way ScyllaDB has stored them.

All read through :class:`~cdcgen.schema.SourceSchema` names, so the same code reads a real
cluster and a sandbox's copies of its tables (design doc section 5):

* :class:`RaftGenerationSource`: ``committed_cdc_generations`` (static column of
  ``system.topology``) lists ``(timestamp, data id)``; each id's rows of
  ``system.cdc_generations_v3``;
* :class:`GossipGenerationSource`: the ID the cluster gossips, persisted in
  ``system.cdc_local``, and ``cdc_generation_descriptions_v2`` rows, used only when as
  many rows as ``num_ranges`` are there (a joining node can fail half-way). Only the
  current ID is in the metadata, so the source remembers every ID it has seen (seed it
  with ``known`` after a restart); a V1 ID (no UUID, as left by a 4.3 cluster) is read
  from the V1 table, as ScyllaDB itself does;
* :class:`LegacyGenerationSource`: a cluster coming from ScyllaDB 4.3: its V1 generations
  (:mod:`.v1_sources`) until the 4.3 -> 4.4 rule says V2, re-checked on every listing.

A generation still being written raises :class:`~cdcgen.core.errors.IncompleteGeneration`;
one that cannot be a valid description raises
:class:`~cdcgen.core.errors.CorruptGeneration`. Reads run at the client's metadata
consistency (QUORUM on multi-node clusters).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from cdcgen.adapters.description_rows import (
    RawRow,
    arrays_from_rows,
    description_from_rows,
    v1_generation_id,
)
from cdcgen.adapters.v1_sources import V1GenerationSource, detect_legacy_mode, v1_tables_exist
from cdcgen.adapters.vnode_spans import VnodeGenerations
from cdcgen.core.errors import CorruptGeneration, IncompleteGeneration
from cdcgen.core.generation import Generation, SourceMode
from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.time import naive_as_utc
from cdcgen.core.topology import TopologyDescription
from cdcgen.schema import (
    CDC_GENERATIONS_V3_KEY,
    CDC_LOCAL_KEY,
    TOPOLOGY_KEY,
    SourceSchema,
    Table,
)

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient


class RaftGenerationSource(VnodeGenerations):
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
        return sorted(
            (naive_as_utc(ts), data_id) for ts, data_id in rows[0].committed_cdc_generations
        )

    def list_generations(self) -> list[Generation]:
        return [Generation(ts, str(data_id)) for ts, data_id in self.committed()]

    def read_description(self, generation: Generation) -> TopologyDescription:
        return description_from_rows(generation.label, self._rows(generation), shard_ordered=False)

    def read_arrays(self, generation: Generation) -> GenerationArrays:
        return arrays_from_rows(generation.label, self._rows(generation), shard_ordered=False)

    def _rows(self, generation: Generation) -> list[RawRow]:
        label = generation.label
        data_id = _uuid(generation, label)
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
        return [(r.range_end, r.streams, r.ignore_msb) for r in rows]


def _uuid(generation: Generation, label: str) -> UUID:
    try:
        return UUID(generation.id)
    except ValueError:
        raise CorruptGeneration(f"{label}: id {generation.id!r} is not a UUID") from None


class GossipGenerationSource(VnodeGenerations):
    """Generations of a gossip-based cluster: the gossiped ID plus v2 descriptions."""

    def __init__(
        self, client: CqlClient, schema: SourceSchema, known: Iterable[Generation] = ()
    ) -> None:
        self.client = client
        self.schema = schema
        self._seen: set[Generation] = set(known)
        self._v1 = V1GenerationSource(client, schema)

    def current(self) -> Generation | None:
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
        stamp = naive_as_utc(rows[0].streams_timestamp)
        ident = str(rows[0].uuid) if rows[0].uuid is not None else v1_generation_id(stamp)
        return Generation(stamp, ident)

    def list_generations(self) -> list[Generation]:
        """V1 generations left by a 4.3 cluster, every ID seen so far, and the current one."""
        current = self.current()
        if current is not None:
            self._seen.add(current)
        refs = set(self._seen)
        if v1_tables_exist(self.client, self.schema):
            refs.update(self._v1.list_generations())
        return sorted(refs)

    def read_description(self, generation: Generation) -> TopologyDescription:
        if _is_v1_id(generation):
            return self._v1.read_description(generation)
        return description_from_rows(generation.label, self._rows(generation), shard_ordered=False)

    def read_arrays(self, generation: Generation) -> GenerationArrays:
        if _is_v1_id(generation):
            return self._v1.read_arrays(generation)
        return arrays_from_rows(generation.label, self._rows(generation), shard_ordered=False)

    def _rows(self, generation: Generation) -> list[RawRow]:
        label = generation.label
        rows = list(
            self.client.execute(
                f"SELECT range_end, streams, ignore_msb, num_ranges FROM "
                f"{self.schema.name(Table.CDC_GENERATION_DESCRIPTIONS_V2)} WHERE id = %s",
                (_uuid(generation, label),),
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
        return [(r.range_end, r.streams, r.ignore_msb) for r in ranges]


def _is_v1_id(generation: Generation) -> bool:
    try:
        UUID(generation.id)
    except ValueError:
        return True
    return False


class LegacyGenerationSource(VnodeGenerations):
    """A cluster coming from ScyllaDB 4.3: V1 until the switch rule says V2, then gossip.

    The switch is checked on every :meth:`list_generations` and, once made, kept.
    """

    def __init__(
        self, client: CqlClient, schema: SourceSchema, known: Iterable[Generation] = ()
    ) -> None:
        self.client = client
        self.schema = schema
        self.v1 = V1GenerationSource(client, schema)
        self.gossip = GossipGenerationSource(client, schema, known)
        self.mode = SourceMode.V1

    def list_generations(self) -> list[Generation]:
        if self.mode is SourceMode.V1:
            self.mode = detect_legacy_mode(self.client, self.schema)
        if self.mode is SourceMode.V1:
            return self.v1.list_generations()
        return self.gossip.list_generations()

    def read_description(self, generation: Generation) -> TopologyDescription:
        return self.gossip.read_description(generation)

    def read_arrays(self, generation: Generation) -> GenerationArrays:
        return self.gossip.read_arrays(generation)
