"""A generation as the pipeline knows it: which one, how its source stores it, what can
be wrong with its metadata.

One :class:`Generation` value names a generation from detection to publication: its
timestamp, the id the source keys it by, and for a tablets stream set the table it
belongs to. Descriptions (up to millions of streams) never travel with it; they are read
by whoever needs them, from the source or the lake.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from cdcgen.core.errors import InvalidTimestamp
from cdcgen.core.time import generation_timestamp, iso_millis, parse_moment, to_millis


class SourceMode(StrEnum):
    """How the source cluster stores its generations (design doc section 5)."""

    RAFT = "raft"
    GOSSIP = "gossip"
    V1 = "v1"
    TABLETS = "tablets"


class StreamLayout(StrEnum):
    """``vnodes``: a cluster-wide generation, streams per vnode and shard. ``tablets``: one
    table's stream set, one stream per tablet on the tablet's last token."""

    VNODES = "vnodes"
    TABLETS = "tablets"


@dataclass(frozen=True, order=True)
class Generation:
    """A committed generation: its timestamp (UTC, ms), the source's id for it, and for a
    tablets stream set the base table (``keyspace.table``) it belongs to ("" otherwise).

    ``id`` is the text form of the raft data timeuuid, the gossip description uuid, the
    timestamp's ISO form (V1), or a tablets log table's id.
    """

    timestamp: datetime
    id: str
    table: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "timestamp", generation_timestamp(self.timestamp))

    @property
    def ms(self) -> int:
        return to_millis(self.timestamp)

    @property
    def iso(self) -> str:
        return iso_millis(self.timestamp)

    @property
    def layout(self) -> StreamLayout:
        return StreamLayout.TABLETS if self.table else StreamLayout.VNODES

    @property
    def key(self) -> tuple[str, int]:
        """Unique in a run: two tables may open stream sets in the same millisecond,
        the timestamp alone names a vnode generation only."""
        return self.table, self.ms

    @property
    def label(self) -> str:
        if self.table:
            return f"{self.table} stream set {self.iso} ({self.id})"
        return f"generation {self.iso} ({self.id})"

    def matches(self, wanted: str) -> bool:
        """Whether ``wanted`` names this generation: its id, milliseconds or ISO time."""
        wanted = wanted.strip()
        if wanted in (self.id, str(self.ms)):
            return True
        try:
            return to_millis(parse_moment(wanted)) == self.ms
        except InvalidTimestamp:
            return False
