"""Flattening a generation into one row per stream, and the raw description columns.

The vectorized ``expected_first_tokens`` (rows mixing shard counts and ignore_msb values)
is checked against the core's scalar ``find_first_token_for_shard`` on arbitrary inputs,
wrap-around ranges and the ends of the ring included; the flattened rows are checked
against the core's objects (``StreamId`` fields, ``TopologyDescription.range_start``).
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdcgen.core.errors import InvalidDescription, InvalidSharding
from cdcgen.core.generation_arrays import build_generation_arrays
from cdcgen.core.stream_id import StreamId
from cdcgen.core.token_arrays import expected_first_tokens
from cdcgen.core.tokens import (
    MAX_TOKEN,
    MIN_TOKEN,
    find_first_token_for_shard,
    shard_of,
    shard_start_table,
)
from cdcgen.core.topology import Node, make_generation
from cdcgen.core.topology_json import description_to_json
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.description_json import columns_from_json, columns_to_json
from cdcgen.generation_lake.streams_table import (
    STREAMS_SCHEMA,
    entries_table,
    flatten_generation,
    ring_vnode_count,
    timestamp_millis,
)

WHEN = datetime(2026, 11, 22, 12, 30, 15, 123000, tzinfo=UTC)
tokens = st.integers(min_value=MIN_TOKEN, max_value=MAX_TOKEN)
edge_tokens = st.sampled_from([MIN_TOKEN, MIN_TOKEN + 1, -1, 0, 1, MAX_TOKEN - 1, MAX_TOKEN])
any_token = st.one_of(tokens, edge_tokens)


@st.composite
def sharding_rows(draw: st.DrawFn) -> tuple[int, int, int, int, int]:
    shards = draw(st.integers(min_value=1, max_value=70))
    return (
        draw(any_token),
        draw(any_token),
        draw(st.integers(min_value=0, max_value=shards - 1)),
        shards,
        draw(st.sampled_from([0, 1, 4, 12, 20, 63])),
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(sharding_rows(), min_size=1, max_size=40))
def test_expected_first_tokens_match_the_scalar_function(
    rows: list[tuple[int, int, int, int, int]],
) -> None:
    start, end, shard, shards, ignore = (
        np.array(column, dtype=np.int64) for column in zip(*rows, strict=True)
    )
    found, valid = expected_first_tokens(start, end, shard, shards, ignore)
    for i, row in enumerate(rows):
        _, _, _, count, ignore = row
        if count > 1 and count > 2 ** (64 - ignore):
            # e.g. 3 shards cannot share chunks of 2 tokens: no node has this sharding
            assert not valid[i], row
            with pytest.raises(InvalidSharding):
                shard_start_table(count, ignore)
        else:
            assert valid[i] and int(found[i]) == find_first_token_for_shard(*row), row


def test_small_ranges_give_the_range_end_to_shards_owning_none_of_them() -> None:
    # (0, 10] holds no token of most of 64 shards (ignore_msb 12): they get the end itself.
    found, _ = expected_first_tokens(0, 10, np.arange(64), 64, 12)
    owner = shard_of(1, 64, 12)
    assert int(found[owner]) == 1
    assert all(int(found[j]) == 10 for j in range(64) if j != owner and j != shard_of(10, 64, 12))


def test_impossible_sharding_is_masked_not_raised() -> None:
    found, valid = expected_first_tokens([0, 0, 0], [5, 5, 5], [0, 3, 0], [2, 2, 2], [12, 12, 64])
    assert valid.tolist() == [True, False, False]
    assert int(found[0]) == find_first_token_for_shard(0, 5, 0, 2, 12)


def _nodes(seed: int, count: int, vnodes: int, shards: tuple[int, ...]) -> list[Node]:
    rng = random.Random(seed)
    return [
        Node(
            f"n{i}",
            shards[i % len(shards)],
            12 if i % 2 else 0,
            tuple(rng.randrange(MIN_TOKEN, MAX_TOKEN) for _ in range(vnodes)),
        )
        for i in range(count)
    ]


@settings(max_examples=25, deadline=None)
@given(
    st.integers(min_value=0, max_value=2**32),
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=1, max_value=6),
)
def test_flattened_rows_agree_with_the_core_objects(seed: int, count: int, vnodes: int) -> None:
    description = make_generation(_nodes(seed, count, vnodes, (1, 3, 7)), random.Random(seed))
    table = flatten_generation(DescriptionColumns.from_description(description), WHEN, "g")
    assert table.schema == STREAMS_SCHEMA
    rows = table.to_pylist()
    streams = list(description.streams())
    assert len(rows) == len(streams)
    position = 0
    for index, entry in enumerate(description.entries):
        for shard, stream in enumerate(entry.streams):
            row = rows[position]
            position += 1
            assert row["stream_id"] == stream.raw and row["stream_id_hex"] == stream.hex
            assert (row["entry_index"], row["shard"], row["shard_count"]) == (
                index,
                shard,
                len(entry.streams),
            )
            assert (row["range_start"], row["range_end"]) == (
                description.range_start(index),
                entry.range_end,
            )
            assert row["ignore_msb"] == entry.sharding_ignore_msb
            assert row["stream_token"] == stream.token == row["expected_first_token"]
            assert (row["version"], row["index_bits"], row["random_bits"]) == (
                stream.version,
                stream.index,
                stream.random,
            )
            assert row["generation_timestamp"] == WHEN and row["generation_id"] == "g"


def test_vectorized_builder_and_objects_flatten_identically() -> None:
    nodes = _nodes(7, 5, 16, (4, 8))
    from_objects = DescriptionColumns.from_description(make_generation(nodes, random.Random(3)))
    from_arrays = DescriptionColumns.from_arrays(build_generation_arrays(nodes, random.Random(3)))
    assert flatten_generation(from_objects, WHEN, "g").equals(
        flatten_generation(from_arrays, WHEN, "g")
    )


def test_json_round_trip_matches_the_core_format() -> None:
    description = make_generation(_nodes(1, 3, 4, (2, 5)), random.Random(1))
    columns = DescriptionColumns.from_description(description)
    assert columns_to_json(columns) == description_to_json(description)
    again = columns_from_json(json.loads(json.dumps(columns_to_json(columns))))
    assert again.blob_data == columns.blob_data
    assert again.to_description() == description


def test_broken_descriptions_are_kept_for_validation_to_judge() -> None:
    good = StreamId.from_parts(100, 1, 5)
    columns = columns_from_json(
        {
            "entries": [
                {
                    "token_range_end": 200,
                    "sharding_ignore_msb": 0,
                    "streams": [good.hex, "0x" + "00" * 15],
                },
                {"token_range_end": 150, "sharding_ignore_msb": 0, "streams": []},
                {"token_range_end": 300, "sharding_ignore_msb": 0, "streams": ["12" * 16]},
            ]
        }
    )
    assert columns.entry_count == 3 and columns.stream_count == 3
    rows = flatten_generation(columns, WHEN, "g").to_pylist()
    short = rows[1]
    assert short["stream_token"] == MIN_TOKEN and short["version"] is None  # CDC partitioner rule
    assert rows[2]["version"] == 0x2 and rows[2]["entry_index"] == 2
    entries = entries_table(columns).to_pylist()
    assert [e["stream_count"] for e in entries] == [2, 0, 1]
    assert entries[0]["range_start"] == 300  # entry 0 wraps to the last end
    with pytest.raises(InvalidDescription):
        columns.to_description()


@pytest.mark.parametrize(
    "bad",
    [
        {"entries": [{"token_range_end": 1, "sharding_ignore_msb": 0, "streams": ["zz" * 16]}]},
        {"entries": [{"token_range_end": 2**63, "sharding_ignore_msb": 0, "streams": []}]},
        {"entries": [{"token_range_end": 1, "streams": []}]},
        {"entries": [{"token_range_end": True, "sharding_ignore_msb": 0, "streams": []}]},
        {"entries": "nope"},
    ],
)
def test_unrepresentable_json_is_an_error_naming_the_place(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidDescription, match=r"entries|description"):
        columns_from_json(bad)


def test_entries_table_with_the_ring_knows_owners_and_ring_tokens() -> None:
    nodes = [Node("a", 3, 12, (-50, 70)), Node("b", 5, 0, (10,))]
    columns = DescriptionColumns.from_description(make_generation(nodes, random.Random(0)))
    rows = entries_table(columns, nodes).to_pylist()
    assert [(r["range_end"], r["is_ring_token"], r["owner_shard_count"]) for r in rows] == [
        (-50, True, 3),
        (10, True, 5),
        (70, True, 3),
    ]
    assert ring_vnode_count(nodes) == 3
    unknown = entries_table(columns).to_pylist()
    assert all(r["is_ring_token"] is None and r["owner_shard_count"] is None for r in unknown)


@given(st.integers(min_value=-(10**13), max_value=10**14))
def test_timestamp_millis_is_exact(millis: int) -> None:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis)
    assert timestamp_millis(moment) == millis


def test_a_generation_of_a_hundred_thousand_streams_flattens_in_well_under_a_second_per_100k() -> (
    None
):
    nodes = _nodes(3, 25, 64, (64,))
    columns = DescriptionColumns.from_arrays(build_generation_arrays(nodes, random.Random(1)))
    table = flatten_generation(columns, WHEN, "g")
    assert table.num_rows == 25 * 64 * 64
    assert pa.compute.all(
        pa.compute.equal(table["stream_token"], table["expected_first_token"])
    ).as_py()


def test_stream_rows_are_the_publishers_rows_without_objects() -> None:
    from cdcgen.adapters.publisher import rows_of

    description = make_generation(_nodes(4, 3, 5, (3, 6)), random.Random(4))
    columns = DescriptionColumns.from_description(description)
    assert columns.stream_rows() == rows_of(description)


def test_a_stream_that_is_not_text_is_named_by_its_entry() -> None:
    good = {"token_range_end": 5, "sharding_ignore_msb": 0, "streams": ["00" * 16]}
    bad = {"token_range_end": 9, "sharding_ignore_msb": 0, "streams": ["00" * 16, 7]}
    with pytest.raises(InvalidDescription, match=r"entries\[1\]\.streams: expected a list"):
        columns_from_json({"entries": [good, bad]})
