"""Which consistency the pipeline's own state gets (cdcgen.adapters.cql): LOCAL_QUORUM in
a local datacenter, else what the metadata gets."""

from __future__ import annotations

import pytest
from cassandra import ConsistencyLevel

from cdcgen.adapters.cql import state_consistency_level


@pytest.mark.parametrize(
    ("nodes", "local", "level"),
    [
        (1, None, ConsistencyLevel.ONE),
        (1, "dc1", ConsistencyLevel.ONE),  # one node: nothing to agree with
        (3, None, ConsistencyLevel.QUORUM),
        (6, "dc1", ConsistencyLevel.LOCAL_QUORUM),
    ],
)
def test_state_is_local_quorum_in_a_local_datacenter(
    nodes: int, local: str | None, level: int
) -> None:
    assert state_consistency_level(nodes, local) == level
