"""The ring each generation was made for, recorded in the lake by detection.

::

    <lake>/rings/generation_ts=<ms>.json    the ring a detection saw (core.ring JSON)

Detection reads the live ring and records it with the newest committed generation the
first time it sees that generation as the newest: that is the ring the generation was
made from. The extract step copies the record into the generation's partition, so an
older generation is later validated against the ring it was made from, never against a
ring that changed since. First record wins; a file is written whole, then renamed.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from cdcgen.core.generation import Generation
from cdcgen.core.ring import Ring, ring_from_json, ring_to_json
from cdcgen.extract.lake import PARTITION_PREFIX

RINGS_DIR = "rings"


def ring_path(lake: Path, generation: Generation) -> Path:
    """Where the ring of a (vnode) generation is recorded."""
    return Path(lake) / RINGS_DIR / f"{PARTITION_PREFIX}{generation.ms}.json"


class LakeRingRecords:
    """:class:`cdcgen.ports.RingRecords` over ``<lake>/rings/``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def recorded(self, generation: Generation) -> Ring | None:
        path = ring_path(self.root, generation)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        return ring_from_json(json.loads(text))

    def record(self, generation: Generation, ring: Ring) -> bool:
        path = ring_path(self.root, generation)
        if path.exists():
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.parent / f".{path.name}.{uuid.uuid4().hex[:12]}"
        staging.write_text(json.dumps(ring_to_json(ring)), encoding="utf-8")
        staging.rename(path)
        return True
