"""The generations a table's changes are read in, as :class:`~.windows.GenerationSpan`.

Vnode keyspaces: the cluster's generations from the configured source (raft, gossip,
V1), each operating until the next one starts. Tablets keyspaces: the table's own stream
sets. Only spans that can still matter are read in full (a description may hold
millions of streams): those ending after ``since`` and starting before ``until``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from cdcgen.changes.windows import GenerationSpan, TableRef, generation_spans, tablet_spans
from cdcgen.ports import SourceMode

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig


def load_generations(
    client: CqlClient,
    config: PipelineConfig,
    table: TableRef,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[GenerationSpan]:
    """Spans of ``table`` overlapping ``[since, until)`` (either bound may be open)."""
    from cdcgen.adapters.generation_sources import TabletsStreamSource, source_for

    if SourceMode(config.source_mode) is SourceMode.TABLETS:
        source = TabletsStreamSource(client, config.source_schema, [table.qualified])
        spans: list[GenerationSpan] = []
        for table_id in source.table_ids():
            spans = tablet_spans(source.stream_sets(table_id))
        return _overlapping(spans, since, until)
    generation_source = source_for(client, config)
    refs = sorted(generation_source.list_generations())
    wanted = []
    for i, ref in enumerate(refs):
        end = refs[i + 1].timestamp if i + 1 < len(refs) else None
        if since is not None and end is not None and end <= since:
            continue
        if until is not None and ref.timestamp >= until:
            continue
        wanted.append(ref)
    spans = generation_spans(
        (ref.timestamp, generation_source.read_generation(ref).description, ref.id)
        for ref in wanted
    )
    # Ends come from the full list: the last wanted span may be followed by a newer one.
    ends = {ref.timestamp: refs[i + 1].timestamp for i, ref in enumerate(refs[:-1])}
    return [
        GenerationSpan(span.start, ends.get(span.start), span.mapping, span.id) for span in spans
    ]


def _overlapping(
    spans: list[GenerationSpan], since: datetime | None, until: datetime | None
) -> list[GenerationSpan]:
    return [
        span
        for span in spans
        if not (since is not None and span.end is not None and span.end <= since)
        and not (until is not None and span.start >= until)
    ]
