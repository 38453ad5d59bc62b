"""The two strategies of the generation ports, and the factory that picks one.

A vnodes cluster (raft, gossip, V1) has cluster-wide generations, published to
``cdc_streams_descriptions_v2`` then ``cdc_generation_timestamps``
(:mod:`.vnode_sources`, :mod:`.publisher`). A tablets cluster has per-table stream sets,
published as ScyllaDB's ``cdc_streams`` / ``cdc_timestamps`` views
(:mod:`.tablet_sources`, :mod:`.tablet_publisher`). The orchestration sees only the
ports (:class:`~cdcgen.ports.GenerationSource`,
:class:`~cdcgen.ports.DescriptionPublisher`); :func:`generation_ports` builds the pair
for a configuration.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdcgen.adapters.publisher import CqlDescriptionPublisher
from cdcgen.adapters.ring_reader import ring_reader_for
from cdcgen.adapters.tablet_publisher import TabletsPublisher
from cdcgen.adapters.tablet_sources import TabletsStreamSource
from cdcgen.adapters.vnode_sources import (
    GossipGenerationSource,
    LegacyGenerationSource,
    RaftGenerationSource,
)
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.errors import GenerationChanged
from cdcgen.core.generation import Generation, SourceMode
from cdcgen.core.time import to_millis

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig
    from cdcgen.ports import DescriptionPublisher, GenerationSource, RingReader, StreamRows


def source_for(client: CqlClient, config: PipelineConfig) -> GenerationSource:
    """The generation source for ``config.source_mode`` under ``config.source_schema``.

    ``v1`` is the upgrade-aware :class:`~.vnode_sources.LegacyGenerationSource`. For
    ``tablets``, ``config.extra["cdc_tables"]`` (comma-separated ``keyspace.table``)
    limits the tables.
    """
    schema = config.source_schema
    mode = SourceMode(config.source_mode)
    if mode is SourceMode.RAFT:
        return RaftGenerationSource(client, schema)
    if mode is SourceMode.GOSSIP:
        return GossipGenerationSource(client, schema)
    if mode is SourceMode.V1:
        return LegacyGenerationSource(client, schema)
    tables = [t.qualified for t in TableRef.parse_list(config.extra.get("cdc_tables", ""))]
    return TabletsStreamSource(client, schema, tables or None)


class VnodePublication:
    """Cluster-wide generations: ``cdc_streams_descriptions_v2``, then the timestamp."""

    def __init__(self, publisher: CqlDescriptionPublisher) -> None:
        self.publisher = publisher

    def published_among(self, generations: Sequence[Generation]) -> set[Generation]:
        done = {to_millis(t) for t in self.publisher.published_timestamps()}
        return {g for g in generations if g.ms in done}

    def publish(self, generation: Generation, rows: StreamRows) -> int:
        return self.publisher.publish_rows(generation.timestamp, rows)


class TabletPublication:
    """Per-table stream sets: ScyllaDB's ``cdc_streams`` view (current, closed and opened
    streams per timestamp), then ``cdc_timestamps``.

    The closed/opened rows come from the source's history; a set is published only if
    its current streams are exactly the validated ones.
    """

    def __init__(self, publisher: TabletsPublisher, source: TabletsStreamSource) -> None:
        self.publisher = publisher
        self.source = source

    def published_among(self, generations: Sequence[Generation]) -> set[Generation]:
        found: set[Generation] = set()
        for table in sorted({g.table for g in generations}):
            ref = TableRef.parse(table)
            done = {
                to_millis(t)
                for t in self.publisher.published_tablet_timestamps(ref.keyspace, ref.table)
            }
            found |= {g for g in generations if g.table == table and g.ms in done}
        return found

    def publish(self, generation: Generation, rows: StreamRows) -> int:
        table = TableRef.parse(generation.table)
        views = [
            v for v in self.source.views(generation) if to_millis(v.timestamp) == generation.ms
        ]
        validated = {bytes(blob) for _, streams in rows for blob in streams}
        if len(views) != 1 or {s.raw for s in views[0].current} != validated:
            raise GenerationChanged(
                f"{generation.label}: the source's stream set is no longer the one validated; "
                "run the generation again"
            )
        return self.publisher.publish_tablet_streams(table.keyspace, table.table, views)


@dataclass(frozen=True)
class GenerationPorts:
    """The generation ports of one source cluster, over one client (``ring``: none for
    tablets, whose stream sets follow tablets rather than the vnode ring)."""

    source: GenerationSource
    publisher: DescriptionPublisher
    ring: RingReader | None = None


def generation_ports(client: CqlClient, config: PipelineConfig) -> GenerationPorts:
    """Source and publisher for ``config``: the vnodes or the tablets strategy."""
    source = source_for(client, config)
    if isinstance(source, TabletsStreamSource):
        return GenerationPorts(source, TabletPublication(TabletsPublisher(client, config), source))
    publisher = VnodePublication(CqlDescriptionPublisher(client, config))
    return GenerationPorts(source, publisher, ring_reader_for(client, config))


@contextmanager
def connected_generation_ports(config: PipelineConfig) -> Iterator[GenerationPorts]:
    """:func:`generation_ports` over a client opened for ``config``, closed on exit."""
    from cdcgen.adapters.cql import client_for

    with client_for(config) as client:
        yield generation_ports(client, config)
