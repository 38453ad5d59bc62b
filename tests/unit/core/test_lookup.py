"""Vectorized generation building and stream lookup agree with the scalar reference."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdcgen.core import lookup as lookup_module
from cdcgen.core.errors import InvalidDescription, InvalidToken, InvalidTopology
from cdcgen.core.generation_arrays import GenerationArrays, build_generation_arrays
from cdcgen.core.lookup import StreamLookup
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN
from cdcgen.core.topology import Node, TopologyDescription, make_generation
from cdcgen.core.topology_json import description_to_json

tokens = st.integers(min_value=MIN_TOKEN, max_value=MAX_TOKEN)


@st.composite
def topologies(draw: st.DrawFn) -> list[Node]:
    count = draw(st.integers(min_value=1, max_value=6))
    ring = draw(
        st.lists(
            st.one_of(tokens, st.sampled_from([MIN_TOKEN, MIN_TOKEN + 1, -1, 0, MAX_TOKEN])),
            min_size=count,
            max_size=count * 10,
            unique=True,
        )
    )
    return [
        Node(
            name=f"n{i}",
            shard_count=draw(st.sampled_from([1, 2, 3, 7, 12, 64])),
            ignore_msb=draw(st.sampled_from([0, 1, 3, 12, 20])),
            tokens=tuple(ring[i::count]),
        )
        for i in range(count)
    ]


def probe_tokens(description: TopologyDescription, extra: list[int]) -> list[int]:
    probes = [MIN_TOKEN, MIN_TOKEN + 1, -1, 0, 1, MAX_TOKEN - 1, MAX_TOKEN, *extra]
    for end in description.range_ends:
        probes += [t for t in (end - 1, end, end + 1) if MIN_TOKEN <= t <= MAX_TOKEN]
    for stream in description.streams():
        probes.append(stream.token)
    return probes


@settings(max_examples=80, deadline=None)
@given(topologies(), st.lists(tokens, max_size=200), st.integers(min_value=0, max_value=999))
def test_lookup_agrees_with_get_stream(nodes: list[Node], extra: list[int], seed: int) -> None:
    description = make_generation(nodes, random.Random(seed))
    lookup = StreamLookup(description)
    probes = probe_tokens(description, extra)
    expected = [description.get_stream(t) for t in probes]
    assert lookup.streams(np.array(probes, dtype=np.int64)) == expected
    assert lookup.streams(probes) == expected  # plain lists work too


@settings(max_examples=80, deadline=None)
@given(topologies(), st.integers(min_value=0, max_value=2**40))
def test_vectorized_builder_is_identical_to_make_generation(nodes: list[Node], seed: int) -> None:
    expected = make_generation(nodes, random.Random(seed))
    arrays = build_generation_arrays(nodes, random.Random(seed))
    assert arrays.to_description() == expected
    assert arrays.description_json() == description_to_json(expected)


def test_vectorized_builder_on_a_realistic_ring() -> None:
    rng = random.Random(7)
    ring = sorted({rng.randint(MIN_TOKEN, MAX_TOKEN) for _ in range(12 * 16)})
    nodes = [Node(f"n{i}", rng.choice([4, 8, 64]), 12, tuple(ring[i::12])) for i in range(12)]
    expected = make_generation(nodes, random.Random(11))
    arrays = build_generation_arrays(nodes, random.Random(11))
    assert arrays.to_description() == expected
    lookup = StreamLookup.from_arrays(arrays)
    probes = [rng.randint(MIN_TOKEN, MAX_TOKEN) for _ in range(5000)]
    assert lookup.streams(probes) == [expected.get_stream(t) for t in probes]


@settings(max_examples=30, deadline=None)
@given(topologies(), st.integers(min_value=0, max_value=99))
def test_arrays_round_trip_description(nodes: list[Node], seed: int) -> None:
    description = make_generation(nodes, random.Random(seed))
    arrays = GenerationArrays.from_description(description)
    assert arrays.to_description() == description
    assert arrays.stream_tokens().tolist() == [s.token for s in description.streams()]
    assert arrays.stream_count == description.stream_count()
    assert arrays.entry_count == len(description)


def test_stream_indices_point_into_flat_stream_array() -> None:
    nodes = [Node("a", 2, 0, (-100,)), Node("b", 3, 0, (100,))]
    description = make_generation(nodes, random.Random(0))
    lookup = StreamLookup(description)
    # Entry 0 (2 streams) then entry 1 (3 streams): flat rows 0..4.
    # -50 is in entry 1, shard 1 of 3; 200 wraps to entry 0, shard 1 of 2.
    assert lookup.stream_indices(np.array([-50, 200])).tolist() == [2 + 1, 1]
    assert lookup.entry_indices([-100, -99, 100, 101]).tolist() == [0, 1, 1, 0]


def test_streams_keep_trailing_zero_bytes() -> None:
    """Version-0 IDs may end in a zero byte; the lookup must not strip it."""
    from cdcgen.core.stream_id import StreamId
    from cdcgen.core.topology import TokenRange

    stream = StreamId(b"\x01" * 8 + b"\x00" * 8)
    lookup = StreamLookup(TopologyDescription((TokenRange(0, (stream,), 0),)))
    assert lookup.streams([5]) == [stream]


def test_lookup_rejects_non_integer_tokens() -> None:
    lookup = StreamLookup(make_generation([Node("a", 1, 0, (0,))], random.Random(0)))
    with pytest.raises(InvalidToken):
        lookup.stream_indices(np.array([0.5]))
    with pytest.raises(InvalidToken):
        lookup.stream_indices(np.array([2**63], dtype=np.uint64))
    assert lookup.stream_indices(np.array([], dtype=np.int64)).tolist() == []
    assert lookup.stream_indices(np.array([1, 2], dtype=np.int32)).tolist() == [0, 0]


def test_builder_errors() -> None:
    with pytest.raises(InvalidTopology, match="without tokens"):
        build_generation_arrays([], random.Random(0))
    with pytest.raises(InvalidTopology, match="owned by both"):
        build_generation_arrays([Node("a", 1, 0, (1,)), Node("b", 1, 0, (1,))], random.Random(0))


def test_arrays_validate_their_shape() -> None:
    arrays = build_generation_arrays([Node("a", 2, 0, (0, 10))], random.Random(0))
    with pytest.raises(InvalidDescription, match="strictly increasing"):
        GenerationArrays(
            arrays.range_ends[::-1].copy(),
            arrays.shard_counts,
            arrays.ignore_msb,
            arrays.offsets,
            arrays.stream_bytes,
        )
    with pytest.raises(InvalidDescription, match="byte matrix"):
        GenerationArrays(
            arrays.range_ends,
            arrays.shard_counts,
            arrays.ignore_msb,
            arrays.offsets,
            arrays.stream_bytes[:-1],
        )


@pytest.mark.parametrize("max_ends", [0, 10**9])
@pytest.mark.parametrize("block_size", [7, 1 << 16])
def test_bucket_and_binary_search_paths_and_blocks_agree(
    monkeypatch: pytest.MonkeyPatch, max_ends: int, block_size: int
) -> None:
    """Clustered ring tokens (many ends per bucket) and spread ones, both search paths,
    tiny and default blocks: all must give get_stream's answer."""
    rng = random.Random(3)
    clustered = tuple(range(-40, 40, 3))
    spread = tuple(rng.randint(MIN_TOKEN, MAX_TOKEN) for _ in range(40))
    nodes = [Node("a", 8, 12, clustered), Node("b", 3, 0, spread), Node("c", 1, 5, (MAX_TOKEN,))]
    description = make_generation(nodes, random.Random(4))
    monkeypatch.setattr(lookup_module, "MAX_ENDS_PER_BUCKET", max_ends)
    monkeypatch.setattr(lookup_module, "BLOCK_SIZE", block_size)
    lookup = StreamLookup(description)
    probes = probe_tokens(description, [rng.randint(MIN_TOKEN, MAX_TOKEN) for _ in range(500)])
    probes += list(range(-45, 45))
    assert lookup.streams(probes) == [description.get_stream(t) for t in probes]


def test_lookup_keeps_the_input_shape() -> None:
    description = make_generation([Node("a", 4, 0, (-10, 10))], random.Random(0))
    lookup = StreamLookup(description)
    grid = np.array([[MIN_TOKEN, 0], [5, MAX_TOKEN]])
    assert lookup.stream_indices(grid).shape == (2, 2)
    assert lookup.entry_indices(np.int64(5)).shape == ()
    assert lookup.streams(grid) == [description.get_stream(int(t)) for t in grid.reshape(-1)]
