"""Topology descriptions: make_generation, get_stream, shard order recovery and JSON."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdcgen.core.errors import InvalidDescription, InvalidTopology, StreamOrderError
from cdcgen.core.stream_id import StreamId
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN
from cdcgen.core.topology import (
    Node,
    TokenRange,
    TopologyDescription,
    is_optimal,
    make_generation,
    order_streams_by_shard,
    ring_tokens,
)
from cdcgen.core.topology_json import (
    description_from_json,
    description_to_json,
    nodes_from_json,
    nodes_to_json,
)

tokens = st.integers(min_value=MIN_TOKEN, max_value=MAX_TOKEN)


def reference_shard(token: int, shards: int, ignore_msb: int) -> int:
    if shards == 1:
        return 0
    width = 1 << (64 - ignore_msb)
    return int(Fraction((token - MIN_TOKEN) % width, width) * shards)


def in_range(token: int, start: int, end: int) -> bool:
    """Is ``token`` in the ring range ``(start, end]`` (wrapping when start >= end)?"""
    if start < end:
        return start < token <= end
    return token > start or token <= end


def linear_get_stream(description: TopologyDescription, token: int) -> StreamId:
    """Find the entry by scanning every range, not by binary search."""
    matches = [
        entry
        for i, entry in enumerate(description.entries)
        if in_range(token, description.range_start(i), entry.range_end)
    ]
    assert len(matches) == 1, "ranges must cover the ring exactly once"
    entry = matches[0]
    return entry.streams[reference_shard(token, len(entry.streams), entry.sharding_ignore_msb)]


@st.composite
def topologies(draw: st.DrawFn, max_nodes: int = 5, max_tokens: int = 8) -> list[Node]:
    count = draw(st.integers(min_value=1, max_value=max_nodes))
    all_tokens = draw(st.lists(tokens, min_size=count, max_size=count * max_tokens, unique=True))
    nodes = []
    for i in range(count):
        mine = tuple(all_tokens[i::count])
        nodes.append(
            Node(
                name=f"node{i}",
                shard_count=draw(st.sampled_from([1, 2, 3, 7, 8, 16])),
                ignore_msb=draw(st.sampled_from([0, 1, 4, 12])),
                tokens=mine,
            )
        )
    return nodes


# --- make_generation ------------------------------------------------------------------------


def test_two_node_generation_by_hand() -> None:
    """Two shards, ignore_msb 0: shard 0 owns [MIN, -1], shard 1 owns [0, MAX]."""
    nodes = [Node("a", 2, 0, (-100,)), Node("b", 2, 0, (100,))]
    description = make_generation(nodes, random.Random(1))
    assert description.range_ends == (-100, 100)
    # Entry 0 wraps: (100, -100]. Shard 0's first token is just after MIN (past MAX there
    # is none of it); shard 1's is 101.
    assert [s.token for s in description.entries[0].streams] == [MIN_TOKEN + 1, 101]
    # Entry 1: (-100, 100]. Shard 0 starts at -99; shard 1 at 0.
    assert [s.token for s in description.entries[1].streams] == [-99, 0]
    assert [s.index for s in description.streams()] == [0, 0, 1, 1]
    assert {s.version for s in description.streams()} == {1}


def test_single_token_ring_covers_everything() -> None:
    description = make_generation([Node("solo", 1, 12, (500,))], random.Random(0))
    assert len(description) == 1
    assert description.range_start(0) == 500
    (stream,) = description.entries[0].streams
    assert stream.token == 501
    for token in (MIN_TOKEN, -1, 499, 500, 501, MAX_TOKEN):
        assert description.get_stream(token) == stream


def test_shard_without_tokens_in_vnode_gets_the_range_end() -> None:
    # (10, 20] lies inside shard 1 of 2 (ignore 0): shard 0's stream sits on 20.
    nodes = [Node("a", 2, 0, (10, 20))]
    description = make_generation(nodes, random.Random(3))
    entry = description.entries[1]
    assert [s.token for s in entry.streams] == [20, 11]


def test_sharding_ignore_msb_and_counts_come_from_the_owner() -> None:
    nodes = [Node("a", 3, 5, (0,)), Node("b", 8, 12, (1000,))]
    description = make_generation(nodes, random.Random(2))
    assert [len(e.streams) for e in description.entries] == [3, 8]
    assert [e.sharding_ignore_msb for e in description.entries] == [5, 12]


def test_seed_reproduces_generation() -> None:
    nodes = [Node("a", 4, 12, (1, 2, 3)), Node("b", 2, 0, (-5,))]
    assert make_generation(nodes, random.Random(9)) == make_generation(nodes, random.Random(9))
    assert make_generation(nodes, random.Random(9)) != make_generation(nodes, random.Random(8))


def test_duplicate_token_across_nodes_is_an_error() -> None:
    nodes = [Node("a", 1, 0, (1, 2)), Node("b", 1, 0, (2, 3))]
    with pytest.raises(InvalidTopology, match="token 2 is owned by both node a and node b"):
        make_generation(nodes, random.Random(0))


def test_duplicate_token_within_a_node_is_merged() -> None:
    assert ring_tokens([Node("a", 1, 0, (5, 1, 5))]) == [1, 5]


def test_empty_ring_is_an_error() -> None:
    with pytest.raises(InvalidTopology, match="without tokens"):
        make_generation([Node("a", 1, 0, ())], random.Random(0))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": ""}, "node name"),
        ({"shard_count": 0}, "node a: shard count 0"),
        ({"ignore_msb": 64}, "node a: ignore_msb 64"),
        ({"tokens": (2**63,)}, "node a: token 9223372036854775808"),
    ],
)
def test_invalid_nodes(kwargs: dict[str, Any], message: str) -> None:
    fields: dict[str, Any] = {"name": "a", "shard_count": 1, "ignore_msb": 0, "tokens": (1,)}
    fields.update(kwargs)
    with pytest.raises(InvalidTopology, match=message):
        Node(**fields)


@settings(max_examples=60, deadline=None)
@given(topologies(), st.integers(min_value=0, max_value=2**32))
def test_generation_invariants(nodes: list[Node], seed: int) -> None:
    """Coverage and colocation, checked entry by entry with the reference shard formula."""
    description = make_generation(nodes, random.Random(seed))
    owners = {t: n for n in nodes for t in n.tokens}
    assert list(description.range_ends) == sorted(owners)
    assert is_optimal(description, owners)
    seen: set[StreamId] = set()
    for i, entry in enumerate(description.entries):
        node = owners[entry.range_end]
        assert len(entry.streams) == node.shard_count
        assert entry.sharding_ignore_msb == node.ignore_msb
        start = description.range_start(i)
        for shard, stream in enumerate(entry.streams):
            assert stream.version == 1 and stream.index == i
            assert in_range(stream.token, start, entry.range_end)
            owner_shard = reference_shard(stream.token, node.shard_count, node.ignore_msb)
            assert owner_shard == shard or stream.token == entry.range_end
            assert stream not in seen
            seen.add(stream)


def brute_force_first(start: int, end: int, shard: int, shards: int, ignore: int) -> int:
    token = start
    while token != end:
        token = MIN_TOKEN + 1 if token == MAX_TOKEN else token + 1
        if reference_shard(token, shards, ignore) == shard:
            return token
    return end


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=-400, max_value=400), min_size=1, max_size=12, unique=True),
    st.integers(min_value=1, max_value=6),
    st.integers(min_value=58, max_value=61),
)
def test_streams_are_first_tokens_of_their_shards_on_a_tiny_ring(
    ring: list[int], shards: int, ignore: int
) -> None:
    """With chunks of 4..64 tokens every range near 0 can be scanned token by token.
    (The wrap-around entry is scanned too: it is long, but its first tokens come early.)"""
    description = make_generation([Node("a", shards, ignore, tuple(ring))], random.Random(0))
    for i, entry in enumerate(description.entries[1:], start=1):
        start = description.range_start(i)
        expected = [
            brute_force_first(start, entry.range_end, j, shards, ignore) for j in range(shards)
        ]
        assert [s.token for s in entry.streams] == expected


# --- get_stream ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(topologies(), st.lists(tokens, max_size=30), st.integers(min_value=0, max_value=99))
def test_get_stream_matches_linear_scan(nodes: list[Node], probes: list[int], seed: int) -> None:
    description = make_generation(nodes, random.Random(seed))
    edges = [MIN_TOKEN, MAX_TOKEN]
    for end in description.range_ends:
        edges += [end, end - 1 if end > MIN_TOKEN else end, end + 1 if end < MAX_TOKEN else end]
    for token in probes + edges:
        assert description.get_stream(token) == linear_get_stream(description, token)


def test_get_stream_wraps_to_first_entry() -> None:
    description = make_generation([Node("a", 1, 0, (-10, 10))], random.Random(0))
    first = description.entries[0].streams[0]
    assert description.get_stream(11) == first
    assert description.get_stream(MAX_TOKEN) == first
    assert description.get_stream(MIN_TOKEN) == first
    assert description.get_stream(-10) == first
    assert description.get_stream(-9) == description.entries[1].streams[0]


def test_description_requires_increasing_ends_and_streams() -> None:
    stream = StreamId.from_parts(0, 0, 0)
    with pytest.raises(InvalidDescription, match="strictly increasing"):
        TopologyDescription((TokenRange(5, (stream,), 0), TokenRange(5, (stream,), 0)))
    with pytest.raises(InvalidDescription, match="no streams"):
        TokenRange(5, (), 0)
    with pytest.raises(InvalidDescription, match="at least one entry"):
        TopologyDescription(())


# --- is_optimal ---------------------------------------------------------------------------


def test_is_optimal() -> None:
    nodes = [Node("a", 1, 0, (1, 2)), Node("b", 1, 0, (3,))]
    description = make_generation(nodes, random.Random(0))
    assert is_optimal(description, [1, 2, 3])
    assert is_optimal(description, [3, 2, 1, 1])
    assert not is_optimal(description, [1, 2])  # a node left
    assert not is_optimal(description, [1, 2, 3, 4])  # a node joined
    assert not is_optimal(description, [1, 2, 4])  # a token moved


# --- order_streams_by_shard -----------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(topologies(), st.integers(min_value=0, max_value=99))
def test_order_streams_by_shard_recovers_shard_order(nodes: list[Node], seed: int) -> None:
    description = make_generation(nodes, random.Random(seed))
    for i, entry in enumerate(description.entries):
        start = description.range_start(i)
        recovered = order_streams_by_shard(
            start, entry.range_end, sorted(entry.streams), entry.sharding_ignore_msb
        )
        assert set(recovered) == set(entry.streams)
        # Positions agree on tokens; IDs agree whenever the token is not shared.
        assert [s.token for s in recovered] == [s.token for s in entry.streams]
        shared = {
            s.token for s in entry.streams if [x.token for x in entry.streams].count(s.token) > 1
        }
        for got, original in zip(recovered, entry.streams, strict=True):
            if original.token not in shared:
                assert got == original


def test_order_streams_by_shard_on_a_byte_sorted_set() -> None:
    # 2 shards, ignore 0; range (-100, 100]: shard 0 -> -99, shard 1 -> 0.
    shard0 = StreamId.from_parts(-99, 1, 5)
    shard1 = StreamId.from_parts(0, 1, 6)
    assert sorted([shard0, shard1]) == [shard1, shard0]  # bytes put 0x00.. before 0xff..
    assert order_streams_by_shard(-100, 100, [shard1, shard0], 0) == (shard0, shard1)


def test_streams_of_empty_shards_are_assigned_in_byte_order() -> None:
    # (10, 20] with 3 shards, ignore 0: all inside shard 1; shards 0 and 2 sit on 20.
    on_end_a = StreamId.from_parts(20, 1, 9)
    on_end_b = StreamId.from_parts(20, 1, 3)
    first = StreamId.from_parts(11, 1, 1)
    recovered = order_streams_by_shard(10, 20, [on_end_a, first, on_end_b], 0)
    assert recovered == (on_end_b, first, on_end_a)


def test_stream_matching_no_shard_is_an_error() -> None:
    stray = StreamId.from_parts(12345, 0, 0)
    with pytest.raises(
        StreamOrderError, match=f"stream {stray.hex} \\(token 12345\\) matches no shard"
    ):
        order_streams_by_shard(-100, 100, [StreamId.from_parts(-99, 0, 0), stray], 0)
    with pytest.raises(StreamOrderError, match="no streams"):
        order_streams_by_shard(-100, 100, [], 0)


# --- JSON ----------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(topologies(), st.integers(min_value=0, max_value=99))
def test_description_json_round_trip(nodes: list[Node], seed: int) -> None:
    description = make_generation(nodes, random.Random(seed))
    document = description_to_json(description)
    assert description_from_json(document) == description
    entry = document["entries"][0]
    assert set(entry) == {"token_range_end", "sharding_ignore_msb", "streams"}
    assert all(len(s) == 32 and s == s.lower() for s in entry["streams"])


def good_entry() -> dict[str, Any]:
    return {
        "token_range_end": 10,
        "sharding_ignore_msb": 12,
        "streams": [StreamId.from_parts(10, 0, 0).hex],
    }


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "description: expected an object"),
        ({}, "description: missing field 'entries'"),
        ({"entries": {}}, "description.entries: expected a list"),
        ({"entries": [good_entry(), 5]}, r"entries\[1\]: expected an object"),
        (
            {"entries": [{**good_entry(), "token_range_end": "10"}]},
            r"entries\[0\].token_range_end: expected an integer",
        ),
        (
            {"entries": [{**good_entry(), "sharding_ignore_msb": True}]},
            r"entries\[0\].sharding_ignore_msb: expected an integer",
        ),
        (
            {"entries": [{k: v for k, v in good_entry().items() if k != "streams"}]},
            r"entries\[0\]: missing field 'streams'",
        ),
        (
            {"entries": [{**good_entry(), "streams": ["00" * 16, "zz"]}]},
            r"entries\[0\].streams\[1\]: CDC stream id 'zz' is not hex",
        ),
        ({"entries": [{**good_entry(), "streams": []}]}, r"entries\[0\]: .*no streams"),
        ({"entries": [good_entry(), good_entry()]}, "strictly increasing"),
        ({"entries": []}, "at least one entry"),
    ],
)
def test_description_from_json_errors(document: Any, message: str) -> None:
    with pytest.raises(InvalidDescription, match=message):
        description_from_json(document)


def test_nodes_json_round_trip() -> None:
    nodes = (Node("a", 4, 12, (1, -2)), Node("b", 1, 0, (MAX_TOKEN,)))
    assert nodes_from_json(nodes_to_json(nodes)) == nodes


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({}, "topology: missing field 'nodes'"),
        (
            {"nodes": [{"shard_count": 1, "ignore_msb": 0, "tokens": []}]},
            r"nodes\[0\]: missing field 'name'",
        ),
        ({"nodes": [{"name": 3}]}, r"nodes\[0\].name: expected a string"),
        (
            {"nodes": [{"name": "a", "shard_count": 1, "ignore_msb": 0, "tokens": [1, "2"]}]},
            r"nodes\[0\].tokens\[1\]: expected an integer",
        ),
        (
            {"nodes": [{"name": "a", "shard_count": 0, "ignore_msb": 0, "tokens": [1]}]},
            r"nodes\[0\]: node a: shard count 0",
        ),
        (
            {"nodes": [{"name": "a", "ignore_msb": 0, "tokens": [1]}]},
            r"nodes\[0\]: missing field 'shard_count'",
        ),
        (
            {"nodes": [{"name": "a", "shard_count": 1, "ignore_msb": 0, "tokens": 5}]},
            "expected a list",
        ),
    ],
)
def test_nodes_from_json_errors(document: Any, message: str) -> None:
    with pytest.raises(InvalidTopology, match=message):
        nodes_from_json(document)
