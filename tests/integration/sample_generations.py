"""A generation large enough that publishing it takes many batches, shared by the fault
tests of publication (a killed publisher, nodes down)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from cdcgen.core.topology import Node, TopologyDescription, make_generation

WHEN = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def generation() -> TopologyDescription:
    """2 nodes x 128 vnodes x 64 shards: 16,384 streams, about 17 batches of 1 MB."""
    rng = random.Random(7)
    ring = [
        Node(f"n{i}", 64, 12, tuple(rng.randrange(-(2**63), 2**63) for _ in range(128)))
        for i in range(2)
    ]
    return make_generation(ring, random.Random(8))
