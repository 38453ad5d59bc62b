"""The readers' pure part: rows as a driver returns them -> descriptions (or errors)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from cdcgen.adapters.description_rows import (
    description_from_rows,
    tablets_description,
    v1_generation_id,
)
from cdcgen.core.errors import CorruptGeneration, InvalidTimestamp
from cdcgen.core.generation import Generation
from cdcgen.core.tablets import TabletStreamSet
from cdcgen.core.time import naive_as_utc
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN
from cdcgen.core.topology import Node, make_generation
from cdcgen_dev.emulator.faults import FaultKind, GenerationFault, apply_row_faults
from cdcgen_dev.emulator.raw import raw_from_description
from cdcgen_dev.emulator.tablet_map import new_tablet_streams

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def generation(seed: int, shards: int = 4, nodes: int = 3):
    rng = random.Random(seed)
    members = [
        Node(f"n{i}", shards, 12, tuple(rng.randint(MIN_TOKEN + 1, MAX_TOKEN) for _ in range(8)))
        for i in range(nodes)
    ]
    return make_generation(members, rng)


def as_driver_sets(raw):
    """What cassandra-driver returns for frozen<set<blob>>: a byte-sorted collection."""
    return [(r.range_end, sorted(r.streams), r.ignore_msb) for r in reversed(raw)]


@pytest.mark.parametrize("seed", range(5))
def test_shard_order_is_recovered_from_byte_sorted_sets(seed: int) -> None:
    description = generation(seed)
    rows = as_driver_sets(raw_from_description(description))
    assert description_from_rows("g", rows, shard_ordered=False) == description


def test_single_token_ring_wraps_around() -> None:
    rng = random.Random(9)
    description = make_generation([Node("n", 8, 12, (12345,))], rng)
    rows = as_driver_sets(raw_from_description(description))
    assert description_from_rows("g", rows, shard_ordered=False) == description


def test_v1_lists_keep_their_order() -> None:
    description = generation(1)
    rows = [(r.range_end, list(r.streams), r.ignore_msb) for r in raw_from_description(description)]
    assert description_from_rows("g", rows, shard_ordered=True) == description


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (FaultKind.BAD_VERSION, "Unknown CDC stream id version 2"),
        (FaultKind.RING_GAP, "gap in the ring"),
        (FaultKind.DUPLICATE_STREAM, "do not match"),
        (FaultKind.MISSING_STREAM, "do not match"),
    ],
)
def test_corrupt_sets_name_generation_and_problem(fault: FaultKind, message: str) -> None:
    raw = apply_row_faults(raw_from_description(generation(2)), [GenerationFault(fault, 3)])
    with pytest.raises(CorruptGeneration, match=message) as info:
        description_from_rows("generation X", as_driver_sets(raw), shard_ordered=False)
    assert str(info.value).startswith("generation X: ")


def test_empty_and_broken_rows_are_corrupt() -> None:
    with pytest.raises(CorruptGeneration, match="no ranges"):
        description_from_rows("g", [], shard_ordered=False)
    with pytest.raises(CorruptGeneration, match="lacks"):
        description_from_rows("g", [(1, None, 12)], shard_ordered=False)
    with pytest.raises(CorruptGeneration, match="16"):
        description_from_rows("g", [(1, [b"short"], 12)], shard_ordered=True)


def test_tablets_description_looks_up_like_a_stream_set() -> None:
    rng = random.Random(3)
    stream_set = TabletStreamSet(T0, new_tablet_streams(8, rng))
    description = tablets_description(stream_set)
    for _ in range(200):
        token = rng.randint(MIN_TOKEN, MAX_TOKEN)
        assert description.get_stream(token) == stream_set.get_stream(token)


def test_ids_and_timestamps() -> None:
    naive = datetime(2026, 5, 1, 12, 0, 0, 123000)
    assert naive_as_utc(naive) == datetime(2026, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)
    assert v1_generation_id(T0) == "2026-05-01T12:00:00.000+00:00"
    assert Generation(T0, "abc").label == "generation 2026-05-01T12:00:00.000+00:00 (abc)"
    assert (
        Generation(T0, "abc", "ks.t").label == "ks.t stream set 2026-05-01T12:00:00.000+00:00 (abc)"
    )
    with pytest.raises(InvalidTimestamp, match="sub-millisecond"):
        Generation(datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=UTC), "abc")
