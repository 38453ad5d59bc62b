"""ScyllaDB 4.3's generations (V1), and the rule by which an upgraded cluster leaves them.

A 4.3 cluster published ``cdc_streams_descriptions`` (one row of streams per generation
timestamp) and kept each description as a single row of ``cdc_generation_descriptions``.
4.4 rewrites the generations that may still hold data into the V2 tables and writes the
``rewritten`` marker (:mod:`cdcgen.adapters.v1_rewrite`); readers switch on that marker.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from cdcgen.adapters.description_rows import description_from_rows, v1_generation_id
from cdcgen.adapters.v1_rewrite import is_rewritten
from cdcgen.adapters.vnode_spans import VnodeGenerations
from cdcgen.core.errors import CorruptGeneration, IncompleteGeneration
from cdcgen.core.generation import Generation, SourceMode
from cdcgen.core.time import naive_as_utc
from cdcgen.core.topology import TopologyDescription
from cdcgen.schema import SourceSchema, Table

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient


class V1GenerationSource(VnodeGenerations):
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
            naive_as_utc(r.time): frozenset(bytes(s) for s in r.streams)
            if r.streams is not None
            else None
            for r in rows
        }

    def list_generations(self) -> list[Generation]:
        return [Generation(ts, v1_generation_id(ts)) for ts in sorted(self.published())]

    def read_description(self, generation: Generation) -> TopologyDescription:
        label = generation.label
        rows = list(
            self.client.execute(
                f"SELECT description FROM {self.schema.name(Table.CDC_GENERATION_DESCRIPTIONS_V1)} "
                "WHERE time = %s",
                (generation.timestamp,),
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
        published = self._published_streams(generation.timestamp)
        if published is not None:
            described = frozenset(s.raw for s in description.streams())
            if published != described:
                raise CorruptGeneration(
                    f"{label}: cdc_streams_descriptions lists {len(published)} streams, the "
                    f"description {len(described)}; {len(published ^ described)} differ"
                )
        return description

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


def v1_tables_exist(client: CqlClient, schema: SourceSchema) -> bool:
    return client.table_exists(schema.name(Table.CDC_STREAMS_DESCRIPTIONS_V1))


def detect_legacy_mode(client: CqlClient, schema: SourceSchema) -> SourceMode:
    """The 4.3 -> 4.4 rule: ``GOSSIP`` (the V2 tables) or still ``V1``.

    No V1 streams table: V2. A ``key = 'rewritten'`` row in ``cdc_local``: V2 (the
    rewrite finished). Otherwise V1, and the caller must ask again later.
    """
    if not v1_tables_exist(client, schema) or is_rewritten(client, schema):
        return SourceMode.GOSSIP
    return SourceMode.V1
