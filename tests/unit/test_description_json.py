"""The description's bytes: what its digest is taken of, so they must never drift."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN
from cdcgen.extract.description_columns import DescriptionColumns
from cdcgen.extract.description_json import (
    columns_from_json,
    columns_to_json,
    description_bytes,
)


def _encoder_bytes(columns: DescriptionColumns) -> bytes:
    """The reference: Python's JSON encoder on the JSON object."""
    return json.dumps(columns_to_json(columns), separators=(",", ":")).encode("utf-8")


def _random_columns(rng: random.Random, entries: int, blob_size: int = 16) -> DescriptionColumns:
    ends = sorted(rng.randint(MIN_TOKEN, MAX_TOKEN) for _ in range(entries))
    ends[0] = MIN_TOKEN  # both extremes of the token range
    ends[-1] = MAX_TOKEN
    counts = [rng.choice([0, 1, 3, 12]) for _ in range(entries)]  # empty entries too
    blobs = [rng.randbytes(blob_size) for _ in range(sum(counts))]
    return DescriptionColumns.build(
        np.array(ends, dtype=np.int64),
        np.array([rng.randint(0, 63) for _ in range(entries)], dtype=np.int64),
        np.array(counts, dtype=np.int64),
        blobs,
    )


@pytest.mark.parametrize("seed", range(5))
def test_description_bytes_are_exactly_the_encoders_bytes(seed: int) -> None:
    columns = _random_columns(random.Random(seed), entries=50)
    written = description_bytes(columns)
    assert written == _encoder_bytes(columns)
    assert description_bytes(columns_from_json(json.loads(written))) == written


def test_ids_of_another_length_are_written_as_the_encoder_writes_them() -> None:
    columns = _random_columns(random.Random(7), entries=10, blob_size=15)
    assert not columns.all_stream_ids_16_bytes()
    assert description_bytes(columns) == _encoder_bytes(columns)


def test_a_description_without_entries_or_streams() -> None:
    empty = DescriptionColumns.build(
        np.array([], dtype=np.int64), np.array([], dtype=np.int64), np.array([], dtype=np.int64), []
    )
    assert description_bytes(empty) == b'{"entries":[]}' == _encoder_bytes(empty)
    one = DescriptionColumns.build(
        np.array([5], dtype=np.int64), np.array([12], dtype=np.int64), np.array([0]), []
    )
    assert description_bytes(one) == _encoder_bytes(one)


def test_a_stream_with_spaces_in_its_hex_stays_that_stream() -> None:
    """``bytes.fromhex`` skips spaces: one 32-character text with spaces is 15 bytes,
    and must not shift every stream after it."""
    good = "00112233445566778899aabbccddeeff"
    spaced = "00 112233445566778899aabbccddee "  # 32 characters, 15 bytes
    obj = {
        "entries": [
            {"token_range_end": 1, "sharding_ignore_msb": 0, "streams": [spaced]},
            {"token_range_end": 2, "sharding_ignore_msb": 0, "streams": [good]},
        ]
    }
    columns = columns_from_json(obj)
    assert columns.stream_count == 2
    assert not columns.all_stream_ids_16_bytes()  # the validation reports its length
    assert columns.stream_rows()[1] == (2, [bytes.fromhex(good)])
