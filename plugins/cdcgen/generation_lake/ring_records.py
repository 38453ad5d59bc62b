"""The ring each generation was made for, recorded in the lake by detection.

::

    <lake>/rings/generation_ts=<ms>.json    the ring a detection saw (core.ring JSON)

Detection reads the live ring and records it with the newest committed generation the
first time it sees that generation as the newest: that is the ring the generation was
made from. The extract step copies the record into the generation's partition, so an
older generation is later validated against the ring it was made from, never against a
ring that changed since. First record wins: a record is created whole only if there
is none (a link on disk, a conditional put on S3), so of two detections racing, one.
"""

from __future__ import annotations

import json

from cdcgen.adapters.lake_store import LakeLocation, LakeRoot
from cdcgen.core.generation import Generation
from cdcgen.core.ring import Ring, ring_from_json, ring_to_json
from cdcgen.generation_lake.lake_tables import PARTITION_PREFIX

RINGS_DIR = "rings"


def ring_path(lake: LakeRoot, generation: Generation) -> LakeLocation:
    """Where the ring of a (vnode) generation is recorded."""
    return LakeLocation.of(lake) / RINGS_DIR / f"{PARTITION_PREFIX}{generation.ms}.json"


class LakeRingRecords:
    """:class:`cdcgen.ports.RingRecords` over ``<lake>/rings/``."""

    def __init__(self, root: LakeRoot) -> None:
        self.root = LakeLocation.of(root)

    def recorded(self, generation: Generation) -> Ring | None:
        try:
            text = ring_path(self.root, generation).read_bytes()
        except FileNotFoundError:
            return None
        return ring_from_json(json.loads(text))

    def record(self, generation: Generation, ring: Ring) -> bool:
        path = ring_path(self.root, generation)
        return path.create_bytes(json.dumps(ring_to_json(ring)).encode("utf-8"))
