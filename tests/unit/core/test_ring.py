"""The ring a generation is checked against: read from ScyllaDB's rows, recorded at
detection, chosen per generation, and what the checks against it see."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cdcgen.core.errors import InvalidTopology
from cdcgen.core.generation import Generation
from cdcgen.core.ring import (
    GOSSIP_RING,
    RAFT_RING,
    Ring,
    RingNode,
    ring_differences,
    ring_for,
    ring_from_json,
    ring_from_rows,
    ring_to_json,
    with_left_nodes,
)
from cdcgen.core.topology import Node, make_generation
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.ring_records import LakeRingRecords
from cdcgen.generation_lake.streams_table import entries_table
from cdcgen.pipeline.detect import detect
from cdcgen.pipeline.outcomes import ValidationOutcome
from cdcgen.pipeline.run_summary import ring_verdict
from cdcgen.reports.records import ExpectationOutcome
from cdcgen_dev.emulator.faults import FaultKind, GenerationFault, generation_ring
from unit.generation_fakes import FakePublisher, FakeRingReader, FakeRingRecords, FakeSource

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
NODES = [Node("a", 2, 12, (-100, 200)), Node("b", 4, 12, (0, 300))]


def test_raft_rows_make_the_ring_without_nodes_that_left() -> None:
    ring = ring_from_rows(
        [
            ("h2", {"300", "0"}, 4, 12, "normal"),
            ("h1", {"-100", "200"}, 2, 12, "bootstrapping"),  # its tokens are in the ring
            ("h3", {"400"}, 2, 12, "left"),
            ("h4", None, 2, 12, "none"),
        ],
        RAFT_RING,
    )
    assert [n.name for n in ring.nodes] == ["h1", "h2"]
    assert ring.nodes[1].tokens == (0, 300)
    assert ring.vnode_count == 4 and ring.shards_known
    assert ring.owners()[300].shard_count == 4


def test_gossip_ring_has_no_shard_counts_and_a_token_owned_twice_is_refused() -> None:
    ring = ring_from_rows([("h1", ["5"], None, None, "normal")], GOSSIP_RING)
    assert not ring.shards_known and "shard counts not stored" in ring.describe()
    twice = Ring((RingNode("x", (5,)), RingNode("y", (5,))), GOSSIP_RING)
    with pytest.raises(InvalidTopology, match="owned by both"):
        twice.owners()
    with pytest.raises(InvalidTopology, match="not a decimal integer"):
        ring_from_rows([("h1", ["five"], 1, 0, "normal")], RAFT_RING)


def test_ring_json_round_trip_and_old_topology_files() -> None:
    ring = Ring(
        (RingNode("h1", (1, 2), 3, 12), RingNode("h2", (5,), None, None, "normal")),
        RAFT_RING,
        T0,
    )
    assert ring_from_json(ring_to_json(ring)) == ring
    old = {"nodes": [{"name": "a", "shard_count": 2, "ignore_msb": 12, "tokens": [-100, 200]}]}
    assert ring_from_json(old) == Ring.of_nodes(NODES[:1])


def test_the_recorded_ring_is_the_one_validated_against_and_none_without_a_record() -> None:
    recorded = Ring.of_nodes(NODES[:1])
    assert ring_for(recorded)[0] is recorded
    ring, why = ring_for(None)
    assert ring is None and "no ring was recorded with this generation" in why


def test_differences_name_the_missing_token_and_the_changed_shard_count() -> None:
    before = Ring.of_nodes(NODES)
    after = Ring.of_nodes([NODES[0], Node("b", 8, 12, (0,))])
    assert ring_differences(before, after) == ["token 300 missing", "node b shard count 4 -> 8"]
    assert ring_differences(before, before) == []


def test_detection_records_the_live_ring_with_the_newest_generation_once() -> None:
    gens = [Generation(T0 + timedelta(minutes=i), f"g{i}") for i in range(2)]
    first, later = Ring.of_nodes(NODES, RAFT_RING), Ring.of_nodes(NODES[:1], RAFT_RING)
    records = FakeRingRecords()
    detect(FakeSource(gens), FakePublisher(), ring=FakeRingReader(first), rings=records)
    assert records.rings == {gens[1]: first}
    # The ring changed without a new generation: the record made first stays.
    detect(FakeSource(gens), FakePublisher(), ring=FakeRingReader(later), rings=records)
    assert records.rings == {gens[1]: first}


def test_lake_ring_records_keep_the_first(tmp_path: Path) -> None:
    records, generation = LakeRingRecords(tmp_path), Generation(T0, "g")
    assert records.recorded(generation) is None
    assert records.record(generation, Ring.of_nodes(NODES, RAFT_RING))
    assert not records.record(generation, Ring.of_nodes(NODES[:1]))
    assert records.recorded(generation) == Ring.of_nodes(NODES, RAFT_RING)


def test_entries_name_the_owner_and_its_shards_only_where_the_ring_stores_them() -> None:
    columns = DescriptionColumns.from_description(make_generation(NODES, random.Random(1)))
    raft = entries_table(columns, Ring.of_nodes(NODES, RAFT_RING)).to_pydict()
    assert raft["owner"] == ["a", "b", "a", "b"]
    assert raft["owner_shard_count"] == [2, 4, 2, 4] == raft["stream_count"]
    gossip_ring = Ring(tuple(RingNode(n.name, n.tokens) for n in NODES), GOSSIP_RING)
    gossip = entries_table(columns, gossip_ring).to_pydict()
    assert gossip["owner"] == ["a", "b", "a", "b"] and gossip["owner_shard_count"] == [None] * 4
    unknown = entries_table(columns).to_pydict()
    assert unknown["owner"] == [None] * 4 and unknown["is_ring_token"] == [None] * 4


def test_emulator_ring_faults_make_a_generation_for_another_ring() -> None:
    missing = generation_ring(NODES, [GenerationFault(FaultKind.RING_TOKEN_MISSING, 1)])
    assert missing[1].tokens == (300,) and missing[0] == NODES[0]
    doubled = generation_ring(NODES, [GenerationFault(FaultKind.SHARD_COUNT_CHANGED, 0)])
    assert doubled[0].shard_count == 4 and doubled[1] == NODES[1]


def _outcome(ring_known: bool, *checks: tuple[str, bool]) -> ValidationOutcome:
    return ValidationOutcome(
        Generation(T0, "g"),
        all(ok for _, ok in checks),
        "",
        expectations=tuple(ExpectationOutcome(name, ok, "") for name, ok in checks),
        ring="r",
        ring_known=ring_known,
    )


def test_ring_verdict_of_a_run() -> None:
    ran = ("range ends are ring tokens", True)
    failed = ("stream count equals the owner's shard count", False)
    assert ring_verdict([_outcome(True, ran), _outcome(False, ("stream IDs unique", True))]) == (
        "passed"
    )
    assert ring_verdict([_outcome(True, ran, failed)]) == "failed"
    assert ring_verdict([_outcome(False, ("stream IDs unique", True))]) == "not run"


# --- nodes that left after the generation was made ---------------------------------------


def test_a_ring_short_of_range_ends_gets_them_as_the_left_nodes() -> None:
    """A node left after the generation was made: its range ends are recorded as the
    left nodes', the ring's own nodes keep their shard counts, and the entries of the
    left ranges are ring tokens whose stream count is not checked."""
    nodes = [Node("a", 2, 12, (-100, 300)), Node("b", 3, 12, (100,)), Node("c", 4, 12, (200,))]
    description = make_generation(nodes, random.Random(5))
    live = Ring.of_nodes(nodes[:2], RAFT_RING)

    ring = with_left_nodes(live, description.range_ends)
    assert ring.vnode_count == 4 and ring.left_tokens == 1 and ring.shards_known
    assert ring.describe() == (
        "system.topology: 2 nodes, 4 tokens (1 of them of nodes that left since), 5 shards"
    )
    assert ring_from_json(ring_to_json(ring)) == ring
    entries = entries_table(DescriptionColumns.from_description(description), ring).to_pylist()
    assert all(e["is_ring_token"] for e in entries)
    owners = {e["range_end"]: (e["owner"], e["owner_shard_count"]) for e in entries}
    assert owners == {-100: ("a", 2), 100: ("b", 3), 200: (None, None), 300: ("a", 2)}


def test_a_generation_whose_nodes_of_different_shard_counts_left_passes_validation(
    tmp_path: Path,
) -> None:
    """Two nodes left, of 4 and 5 shards: their ranges have no owner to agree with, so
    the generation passes every check, against the ring it was made for."""
    from cdcgen.validation.generation_suite import validate_description

    rng = random.Random(8)
    nodes = [Node(n, shards, 12, tuple(rng.randrange(-(2**63), 2**63) for _ in range(4)))
             for n, shards in (("a", 2), ("b", 3), ("c", 4), ("d", 5))]  # fmt: skip
    description = make_generation(nodes, random.Random(9))
    ring = with_left_nodes(Ring.of_nodes(nodes[:2], RAFT_RING), description.range_ends)
    result = validate_description(
        None, DescriptionColumns.from_description(description), report_dir=tmp_path,
        nodes=ring, engine="sql",
    )  # fmt: skip
    assert result.passed, result.summary
    assert "(8 of them of nodes that left since)" in result.summary


def test_a_ring_the_generation_does_not_refine_is_left_as_it_is() -> None:
    """A ring token that is no range end (a node joined without a new generation) or the
    very ring the generation was made for: nothing to add, the checks judge."""
    nodes = [Node("a", 2, 12, (-100, 300)), Node("b", 3, 12, (100,))]
    description = make_generation(nodes, random.Random(5))
    made_for = Ring.of_nodes(nodes, RAFT_RING)
    joined = Ring.of_nodes([*nodes, Node("c", 4, 12, (200,))], RAFT_RING)
    coarser_and_other = Ring.of_nodes([Node("a", 2, 12, (-100, 250))], RAFT_RING)
    for ring in (made_for, joined, coarser_and_other, Ring((), RAFT_RING)):
        assert with_left_nodes(ring, description.range_ends) is ring
