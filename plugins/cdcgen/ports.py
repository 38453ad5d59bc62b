"""The small interfaces between the pipeline and the outside world.

The pipeline (DAG tasks, Spark jobs, the CLI) talks only to these protocols; the
adapters in :mod:`cdcgen.adapters` implement them for cassandra-driver against a
real ScyllaDB, and for the sandbox emulator.  Keeping them this small is what
lets the same orchestration code run unchanged against both.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from cdcgen.core.topology import TopologyDescription


class SourceMode(StrEnum):
    """How the source cluster stores its generations (design doc section 5)."""

    RAFT = "raft"
    GOSSIP = "gossip"
    V1 = "v1"
    TABLETS = "tablets"


class MetadataError(Exception):
    """Base class: the source's generation metadata cannot be used as it is."""


class IncompleteGeneration(MetadataError):
    """Transient: a generation is being written (e.g. rows < num_ranges); read again later."""


class CorruptGeneration(MetadataError):
    """Terminal: the metadata is wrong (bad stream IDs, unknown version, ...).

    ``stored_rows``: the ``(range_end, streams, ignore_msb)`` rows as read, when the
    reader got that far; the extract step then still puts them in the lake, so the
    validation can name what is wrong in its report instead of the run only failing.
    """

    def __init__(self, message: str, stored_rows: list[tuple[Any, Any, Any]] | None = None):
        super().__init__(message)
        self.stored_rows = stored_rows


@dataclass(frozen=True, order=True)
class GenerationRef:
    """A committed generation, known by its timestamp and its source-specific id.

    ``id`` is the text form of the raft data timeuuid, the gossip description
    uuid, or (V1) the timestamp's ISO form: whatever the source keys it by.
    """

    timestamp: datetime  # UTC, millisecond precision
    id: str


@dataclass(frozen=True)
class Generation:
    ref: GenerationRef
    description: TopologyDescription


class GenerationSource(Protocol):
    """Reads committed generations from the source cluster."""

    def list_generations(self) -> list[GenerationRef]:
        """Every committed generation whose description can be read, oldest first."""
        ...

    def read_generation(self, ref: GenerationRef) -> Generation:
        """The full description; raises IncompleteGeneration or CorruptGeneration."""
        ...


@dataclass(frozen=True)
class NodeClock:
    """One node's clock reading, or why it could not be read."""

    node: str
    clock: datetime | None
    error: str | None = None


class ClockReader(Protocol):
    """Reads every node's current clock (``SELECT totimestamp(now()) FROM system.local``)."""

    def read_clocks(self) -> list[NodeClock]: ...


class DescriptionPublisher(Protocol):
    """Writes the user-facing description tables, streams first, timestamp last."""

    def published_timestamps(self) -> set[datetime]: ...

    def publish(self, timestamp: datetime, description: TopologyDescription) -> int:
        """Publishes one generation idempotently; returns the number of stream rows."""
        ...
