"""Stored description rows read as arrays agree with the object path, or defer to it.

The vectorized reader (:func:`cdcgen.adapters.description_rows.arrays_from_rows`) must
give exactly the arrays of ``description_from_rows`` for every well-formed set of rows
(rows in any order, each range's streams in byte order as a ``set<blob>`` returns them),
and for broken rows the object path's own error, word for word.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdcgen.adapters.description_rows import (
    RawRow,
    _stored_arrays,
    arrays_from_rows,
    description_from_rows,
)
from cdcgen.core.errors import CorruptGeneration, InvalidDescription
from cdcgen.core.generation_arrays import GenerationArrays, build_generation_arrays
from cdcgen.core.topology import Node
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.reports.adapters import owners_from_nodes, ring_from_arrays, ring_from_description

LABEL = "generation 2026-11-22T00:00:00.000Z"


@st.composite
def rings(draw: st.DrawFn) -> list[Node]:
    count = draw(st.integers(1, 4))
    tokens = draw(
        st.lists(st.integers(-(2**63), 2**63 - 1), min_size=count, max_size=count * 6, unique=True)
    )
    nodes = []
    for i in range(count):
        own = tuple(tokens[i::count])
        if own:
            nodes.append(Node(f"n{i}", draw(st.integers(1, 20)), draw(st.integers(0, 14)), own))
    return nodes


def stored_rows(arrays: GenerationArrays, seed: int, *, as_sets: bool = True) -> list[RawRow]:
    """The rows ScyllaDB would return: each range's streams sorted by bytes, rows shuffled."""
    data = arrays.stream_bytes.tobytes()
    offsets = arrays.offsets.tolist()
    rows: list[RawRow] = []
    for i, end in enumerate(arrays.range_ends.tolist()):
        streams = [data[r * 16 : (r + 1) * 16] for r in range(offsets[i], offsets[i + 1])]
        rows.append((end, sorted(streams) if as_sets else streams, int(arrays.ignore_msb[i])))
    random.Random(seed).shuffle(rows)
    return rows


def object_path(rows: list[RawRow], shard_ordered: bool = False) -> GenerationArrays:
    return GenerationArrays.from_description(
        description_from_rows(LABEL, rows, shard_ordered=shard_ordered)
    )


def assert_same(left: GenerationArrays, right: GenerationArrays) -> None:
    for name in ("range_ends", "shard_counts", "ignore_msb", "offsets", "stream_bytes"):
        assert (getattr(left, name) == getattr(right, name)).all(), name


@settings(max_examples=60, deadline=None)
@given(rings(), st.integers(0, 2**32))
def test_well_formed_rows_give_the_object_paths_arrays(nodes: list[Node], seed: int) -> None:
    arrays = build_generation_arrays(nodes, random.Random(seed))
    rows = stored_rows(arrays, seed)
    found = arrays_from_rows(LABEL, rows, shard_ordered=False)
    assert_same(found, object_path(rows))
    # Shards owning no token of a range share its end: their streams may swap, no other.
    assert found.offsets.tolist() == arrays.offsets.tolist()
    assert sorted(map(bytes, found.stream_bytes)) == sorted(map(bytes, arrays.stream_bytes))


def test_shard_ordered_rows_keep_their_order() -> None:
    nodes = [Node("a", 8, 12, (-(2**62), 0, 2**62)), Node("b", 3, 0, (5, 2**40))]
    arrays = build_generation_arrays(nodes, random.Random(1))
    rows = stored_rows(arrays, 2, as_sets=False)
    assert_same(arrays_from_rows(LABEL, rows, shard_ordered=True), arrays)


def _corruptions(rows: list[RawRow]) -> dict[str, list[RawRow]]:
    """Each kind breaks the range with the most streams (rows[0] after the rotation)."""
    widest = max(range(len(rows)), key=lambda i: len(list(rows[i][1])))
    rows = rows[widest:] + rows[:widest]
    end, streams, ignore = rows[0]
    first = list(streams)
    other_end = rows[1][0]
    return {
        "short stream id": [(end, [first[0][:15], *first[1:]], ignore), *rows[1:]],
        "unknown version": [(end, [first[0][:15] + b"\x0f", *first[1:]], ignore), *rows[1:]],
        "no streams": [(end, [], ignore), *rows[1:]],
        "missing stream": [(end, first[:-1], ignore), *rows[1:]],
        "stream listed twice": [(end, [first[0], *first[:-1]], ignore), *rows[1:]],
        "foreign stream": [(end, [*first[:-1], rows[1][1][0]], ignore), *rows[1:]],
        "duplicate range end": [(other_end, streams, ignore), *rows[1:]],
        "impossible ignore_msb": [(end, streams, 64), *rows[1:]],
        "null range end": [(None, streams, ignore), *rows[1:]],  # type: ignore[list-item]
        "not a blob": [(end, ["x" * 16, *first[1:]], ignore), *rows[1:]],  # type: ignore[list-item]
    }


KINDS = list(_corruptions([(0, [b"0" * 16], 0), (1, [b"1" * 16], 0)]))


@pytest.mark.parametrize("kind", KINDS)
def test_broken_rows_get_the_object_paths_verdict(kind: str) -> None:
    """Both refuse with the same words, or (a change the rules allow) both accept alike."""
    nodes = [Node("a", 64, 12, (-(2**62), 0, 2**62)), Node("b", 4, 12, (7, 2**40))]
    rows = stored_rows(build_generation_arrays(nodes, random.Random(3)), 4)
    broken = _corruptions(rows)[kind]
    try:
        expected = object_path(broken)
    except CorruptGeneration as refused:
        with pytest.raises(CorruptGeneration) as found:
            arrays_from_rows(LABEL, broken, shard_ordered=False)
        assert str(found.value) == str(refused)
        assert found.value.stored_rows is not None
    else:
        assert_same(arrays_from_rows(LABEL, broken, shard_ordered=False), expected)


def test_every_corruption_kind_is_refused() -> None:
    """The comparison above is not vacuous: the object path refuses each kind here."""
    nodes = [Node("a", 64, 12, (-(2**62), 0, 2**62)), Node("b", 4, 12, (7, 2**40))]
    rows = stored_rows(build_generation_arrays(nodes, random.Random(3)), 4)
    for broken in _corruptions(rows).values():
        with pytest.raises(CorruptGeneration):
            object_path(broken)


@settings(max_examples=30, deadline=None)
@given(rings(), st.integers(0, 2**32))
def test_the_report_ring_from_columns_is_the_ring_from_objects(
    nodes: list[Node], seed: int
) -> None:
    arrays = build_generation_arrays(nodes, random.Random(seed))
    columns = DescriptionColumns.from_arrays(arrays)
    owners = owners_from_nodes((n.name, n.tokens) for n in nodes)
    found = columns.to_arrays()
    assert found is not None
    assert ring_from_arrays(found, owners) == ring_from_description(
        columns.to_description(), owners
    )


def test_columns_give_arrays_exactly_when_they_give_a_description() -> None:
    nodes = [Node("a", 64, 12, (-(2**62), 0, 2**62)), Node("b", 4, 12, (7, 2**40))]
    rows = stored_rows(build_generation_arrays(nodes, random.Random(3)), 4, as_sets=False)
    rows.sort(key=lambda row: row[0])
    for kind, broken in _corruptions(rows).items():
        if kind in ("null range end", "not a blob"):
            continue  # not representable as columns
        columns = DescriptionColumns.from_blobs(
            [(end, ignore, list(streams)) for end, streams, ignore in broken]
        )
        try:
            columns.to_description()
        except InvalidDescription:
            assert columns.to_arrays() is None, kind
        else:
            assert columns.to_arrays() is not None, kind


def vectorized(rows: list[RawRow]) -> GenerationArrays | None:
    """The fast path alone, without the object path behind it."""
    return _stored_arrays(list(rows), False)


@settings(max_examples=40, deadline=None)
@given(rings(), st.integers(0, 2**32))
def test_streams_out_of_byte_order_still_take_the_fast_path(nodes: list[Node], seed: int) -> None:
    """The single-key sorts rely on ``set<blob>`` byte order; any other order in a range
    (here shuffled) takes the general sorts, with the same arrays."""
    arrays = build_generation_arrays(nodes, random.Random(seed))
    rng = random.Random(seed)
    rows: list[RawRow] = [
        (end, rng.sample(list(streams), len(list(streams))), ignore)
        for end, streams, ignore in stored_rows(arrays, seed)
    ]
    found = vectorized(rows)
    assert found is not None
    assert_same(found, object_path(rows))


def test_ranges_around_token_zero_and_the_ring_end() -> None:
    """Byte order puts token -1 after token 0, and the first range wraps past the last."""
    nodes = [Node("a", 8, 12, (-(2**63) + 3, -7, 2**63 - 9)), Node("b", 5, 0, (6, 2**62))]
    rows = stored_rows(build_generation_arrays(nodes, random.Random(7)), 8)
    found = vectorized(rows)
    assert found is not None
    assert_same(found, object_path(rows))


def test_streams_swapped_between_ranges_are_declined() -> None:
    """Every stream still on some shard's token, but two in the wrong range: only the
    per-range pairing can tell, and the fast path must leave it to the object path."""
    nodes = [Node("a", 64, 12, (-(2**62), 0, 2**62)), Node("b", 4, 12, (7, 2**40))]
    rows = stored_rows(build_generation_arrays(nodes, random.Random(3)), 4)
    rows.sort(key=lambda row: row[0])
    (end_a, first, ignore_a), (end_b, second, ignore_b) = rows[1], rows[2]
    first_list, second_list = list(first), list(second)
    swapped = [
        rows[0],
        (end_a, sorted([second_list[0], *first_list[1:]]), ignore_a),
        (end_b, sorted([first_list[0], *second_list[1:]]), ignore_b),
        *rows[3:],
    ]
    assert vectorized(swapped) is None
    with pytest.raises(CorruptGeneration):
        object_path(swapped)
