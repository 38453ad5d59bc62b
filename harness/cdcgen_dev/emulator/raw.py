"""A generation description as ScyllaDB writes it: plain rows of bytes, nothing validated.

:class:`~cdcgen.core.topology.TopologyDescription` refuses anything broken, which is right
for the pipeline but wrong for the emulator: to test the readers against corrupt metadata
the emulator must be able to *write* a stream with a bad version or a range without its
streams. So writers take :class:`RawRange` rows (range end, stream blobs in shard order,
ignore_msb), the shape of one ``cdc_generations_v3`` / ``cdc_generation_descriptions_v2``
row or one element of a V1 description list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cdcgen.core.stream_id import StreamId
from cdcgen.core.topology import TokenRange, TopologyDescription


@dataclass(frozen=True, slots=True)
class RawRange:
    """One token range of a generation as stored: ``streams`` in shard order."""

    range_end: int
    streams: tuple[bytes, ...]
    ignore_msb: int


RawDescription = tuple[RawRange, ...]


def raw_from_description(description: TopologyDescription) -> RawDescription:
    """The rows ScyllaDB would write for a (valid) description."""
    return tuple(
        RawRange(entry.range_end, tuple(s.raw for s in entry.streams), entry.sharding_ignore_msb)
        for entry in description.entries
    )


def description_from_raw(raw: Sequence[RawRange]) -> TopologyDescription:
    """Parse rows back into a description, keeping their order; raises on invalid data.

    Used for what an emulated ScyllaDB node would load from its own (order-preserving)
    storage: :class:`~cdcgen.core.errors.InvalidStreamId` or
    :class:`~cdcgen.core.errors.InvalidDescription` mean the node cannot load it.
    """
    entries = tuple(
        TokenRange(r.range_end, tuple(StreamId(s) for s in r.streams), r.ignore_msb)
        for r in sorted(raw, key=lambda r: r.range_end)
    )
    return TopologyDescription(entries)
