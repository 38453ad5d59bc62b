"""In-memory fakes of the generation ports: a cluster's committed generations, the
description tables consumers read, the lake of extracted generations.

They implement :mod:`cdcgen.ports` the way the adapters do (published only once the
timestamp row is written; streams first; refuse a different description for a
published generation), so the orchestration's decisions can be tested in milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.generation import Generation
from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.ring import Ring
from cdcgen.core.topology import TopologyDescription
from cdcgen.core.windows import GenerationSpan
from cdcgen.ports import StreamRows

Rows = list[tuple[int, list[bytes]]]


def rows_for(generation: Generation, ranges: int = 2) -> Rows:
    """A small description of ``generation``: distinct, recognisable stream blobs."""
    seed = generation.ms.to_bytes(8, "big")
    return [(end, [seed + end.to_bytes(8, "big", signed=True)]) for end in range(ranges)]


@dataclass
class FakeSource:
    """:class:`~cdcgen.ports.GenerationSource`: committed generations, in any order."""

    committed: list[Generation] = field(default_factory=list)

    def list_generations(self) -> list[Generation]:
        return sorted(self.committed)

    def read_description(self, generation: Generation) -> TopologyDescription:
        raise NotImplementedError("the generations orchestration never reads descriptions")

    def read_arrays(self, generation: Generation) -> GenerationArrays:
        raise NotImplementedError("the generations orchestration never reads descriptions")

    def spans(
        self, table: TableRef, since: datetime | None = None, until: datetime | None = None
    ) -> list[GenerationSpan]:
        raise NotImplementedError("not a changes source")


class Crash(Exception):
    """The publishing process dies here."""


@dataclass
class FakePublisher:
    """:class:`~cdcgen.ports.DescriptionPublisher`: streams rows, then timestamp rows.

    ``crash_before_timestamp_of`` makes publication of that generation die between its
    streams rows and its timestamp row, as a killed process would.
    """

    streams: dict[Generation, Rows] = field(default_factory=dict)
    timestamps: list[Generation] = field(default_factory=list)  # in the order written
    crash_before_timestamp_of: Generation | None = None

    def published_among(self, generations: Sequence[Generation]) -> set[Generation]:
        return {g for g in generations if g in self.timestamps}

    def publish(self, generation: Generation, rows: StreamRows) -> int:
        wanted = [(end, list(streams)) for end, streams in rows]
        existing = self.streams.get(generation)
        if existing is not None and existing != wanted:
            raise ValueError(f"{generation.label} is published with other streams")
        self.streams[generation] = wanted
        if generation == self.crash_before_timestamp_of:
            raise Crash(generation.label)
        if generation not in self.timestamps:
            self.timestamps.append(generation)
        return len(wanted)


@dataclass
class FakeLake:
    """:class:`~cdcgen.ports.GenerationLake`: what the extract step wrote."""

    extracted: dict[Generation, Rows] = field(default_factory=dict)

    read: list[tuple[Generation, int | None, str | None]] = field(default_factory=list)

    def stream_rows(
        self, generation: Generation, version: int | None = None, digest: str | None = None
    ) -> StreamRows:
        self.read.append((generation, version, digest))
        if generation not in self.extracted:
            raise FileNotFoundError(f"{generation.label} was never extracted")
        return self.extracted[generation]


@dataclass
class FakeRingReader:
    """:class:`~cdcgen.ports.RingReader`: the ring the cluster reports right now."""

    ring: Ring | None = None

    def read_ring(self) -> Ring | None:
        return self.ring


@dataclass
class FakeRingRecords:
    """:class:`~cdcgen.ports.RingRecords`: first record wins, as in the lake."""

    rings: dict[Generation, Ring] = field(default_factory=dict)

    def recorded(self, generation: Generation) -> Ring | None:
        return self.rings.get(generation)

    def record(self, generation: Generation, ring: Ring) -> bool:
        if generation in self.rings:
            return False
        self.rings[generation] = ring
        return True
