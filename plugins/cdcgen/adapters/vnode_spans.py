"""What every source of a vnodes cluster shares: cluster-wide generations.

A table's changes are read in the cluster's generations, each operating until the next;
the sources differ only in how they list generations and read a description.
"""

from __future__ import annotations

from datetime import datetime

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.generation import Generation
from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.topology import TopologyDescription
from cdcgen.core.windows import GenerationSpan


class VnodeGenerations:
    """What every vnodes source shares: the generations are cluster-wide, so a table's
    changes are read in the cluster's generations, each operating until the next."""

    def list_generations(self) -> list[Generation]:
        raise NotImplementedError

    def read_description(self, generation: Generation) -> TopologyDescription:
        raise NotImplementedError

    def read_arrays(self, generation: Generation) -> GenerationArrays:
        """Through the description; sources that read rows override it (no objects)."""
        return GenerationArrays.from_description(self.read_description(generation))

    def spans(
        self, table: TableRef, since: datetime | None = None, until: datetime | None = None
    ) -> list[GenerationSpan]:
        """The generations overlapping ``[since, until)``, each read in full (a
        description may hold millions of streams, so only those that can matter)."""
        generations = sorted(self.list_generations())
        spans = []
        for i, generation in enumerate(generations):
            end = generations[i + 1].timestamp if i + 1 < len(generations) else None
            if since is not None and end is not None and end <= since:
                continue
            if until is not None and generation.timestamp >= until:
                continue
            description = self.read_description(generation)
            spans.append(GenerationSpan(generation.timestamp, end, description, generation.id))
        return spans
