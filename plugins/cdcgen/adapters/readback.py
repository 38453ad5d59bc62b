"""Read the published tables back and compare them with the source: the proof a run worked.

Used by ``make demo`` and the end-to-end tests, and handy after an incident: it answers
"is what consumers read exactly what the cluster committed?" without trusting anything
the pipeline recorded about itself. It reads through the same publishers that wrote, as
a consumer would: a generation counts as published only once its timestamp row exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cdcgen.adapters.cql import client_for
from cdcgen.adapters.generation_sources import source_for
from cdcgen.adapters.tablet_publisher import TabletsPublisher
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.errors import MetadataError
from cdcgen.core.generation import Generation
from cdcgen.core.time import to_millis
from cdcgen.core.topology import TopologyDescription

StreamsByRange = dict[int, frozenset[bytes]]


@dataclass
class Comparison:
    """How the published tables compare with the source, generation by generation."""

    published: int = 0
    matching: int = 0
    mismatches: list[str] = field(default_factory=list)
    unpublished: list[str] = field(default_factory=list)  # ISO timestamps


def streams_by_range(description: TopologyDescription) -> StreamsByRange:
    """A description in the shape the published streams table has."""
    return {e.range_end: frozenset(s.raw for s in e.streams) for e in description.entries}


def compare_with_source(config: PipelineConfig) -> Comparison:
    """Read every published generation back and compare it with the source's description.

    A mismatch names the generation and what differs; ``unpublished`` lists committed
    generations with no publication. In tablets mode a generation is one table's stream
    set, compared with the published ``cdc_streams`` view.
    """
    report = Comparison()
    with client_for(config) as client:
        source = source_for(client, config)
        publisher = TabletsPublisher(client, config)
        vnode_times = {to_millis(t) for t in publisher.published_timestamps()}
        tablet_times: dict[str, set[int]] = {}
        for generation in source.list_generations():
            if generation.table:
                if generation.table not in tablet_times:
                    ref = TableRef.parse(generation.table)
                    tablet_times[generation.table] = {
                        to_millis(t)
                        for t in publisher.published_tablet_timestamps(ref.keyspace, ref.table)
                    }
                public = generation.ms in tablet_times[generation.table]
            else:
                public = generation.ms in vnode_times
            if not public:
                report.unpublished.append(generation.iso)
                continue
            report.published += 1
            try:
                description = source.read_description(generation)
            except MetadataError as exc:  # a corrupt source generation must not be published
                report.mismatches.append(f"{generation.label}: published but unreadable: {exc}")
                continue
            difference = _difference(publisher, generation, description)
            if difference is None:
                report.matching += 1
            else:
                report.mismatches.append(difference)
    return report


def _difference(
    publisher: TabletsPublisher, generation: Generation, description: TopologyDescription
) -> str | None:
    if generation.table:
        ref = TableRef.parse(generation.table)
        got = publisher.read_tablet_streams(ref.keyspace, ref.table, generation.timestamp)
        expected = frozenset(s.raw for s in description.streams())
        if got == expected:
            return None
        return (
            f"{generation.label}: {len(got)} streams published, {len(expected)} at source, "
            f"{len(got ^ expected)} differ"
        )
    published = publisher.read_streams(generation.timestamp)
    at_source = streams_by_range(description)
    if published == at_source:
        return None
    differing = sorted(set(published) ^ set(at_source)) or sorted(
        end for end in at_source if published.get(end) != at_source[end]
    )
    return (
        f"{generation.label}: {len(published)} ranges published, {len(at_source)} at source; "
        f"first differing range_end {differing[0]}"
    )
