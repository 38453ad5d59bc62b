"""The description's bytes: what its digest is taken of, so they must never drift."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import numpy as np
import pytest

from cdcgen.core.errors import InvalidDescription
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.description_json import (
    _compact_columns,
    columns_from_bytes,
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


def _read_both_ways(raw: bytes) -> DescriptionColumns | None:
    """``columns_from_bytes(raw)``, after checking it is what the JSON parser makes; None
    when both raise the same error."""
    try:
        expected = columns_from_json(json.loads(raw))
    except (InvalidDescription, ValueError) as error:
        with pytest.raises(type(error)) as raised:
            columns_from_bytes(raw)
        assert str(raised.value) == str(error)
        return None
    found = columns_from_bytes(raw)
    for name in ("range_ends", "ignore_msb", "offsets", "blob_offsets"):
        assert getattr(found, name).dtype == getattr(expected, name).dtype == np.int64
        assert getattr(found, name).tolist() == getattr(expected, name).tolist(), name
    assert found.blob_data == expected.blob_data
    return found


@pytest.mark.parametrize("seed", range(5))
def test_the_compact_form_is_read_by_its_layout_as_the_json_parser_reads_it(seed: int) -> None:
    raw = description_bytes(_random_columns(random.Random(seed), entries=60))
    assert _compact_columns(raw) is not None  # the fast path, not the fallback
    read = _read_both_ways(raw)
    assert read is not None
    assert description_bytes(read) == raw


def test_descriptions_without_entries_or_streams_are_read_by_their_layout() -> None:
    for raw in (
        b'{"entries":[]}',
        b'{"entries":[{"token_range_end":5,"sharding_ignore_msb":12,"streams":[]}]}',
    ):
        assert _compact_columns(raw) is not None
        read = _read_both_ways(raw)
    assert read is not None
    assert description_bytes(read) == raw


def _with_streams(raw: bytes, change: Callable[[str], str]) -> bytes:
    """``raw`` in the compact form with ``change`` applied to every stream's text."""
    obj = json.loads(raw)
    for entry in obj["entries"]:
        entry["streams"] = [change(text) for text in entry["streams"]]
    return json.dumps(obj, separators=(",", ":")).encode()


def _compact_variants() -> list[tuple[str, bytes]]:
    raw = description_bytes(_random_columns(random.Random(11), entries=4))
    first = raw.index(b'"streams":["') + len(b'"streams":["')
    return [
        ("spaced", json.dumps(json.loads(raw), indent=1).encode()),
        ("upper-case hex", _with_streams(raw, str.upper)),
        ("escaped digit", raw[:first] + b"\\u0030" + raw[first + 1 :]),
        ("0x prefix", raw[:first] + b"0x" + raw[first:]),
        ("15-byte IDs", description_bytes(_random_columns(random.Random(3), 4, blob_size=15))),
        ("a bracket in a stream", raw[:first] + b"]}" + raw[first + 2 :]),
        ("leading zero", raw.replace(b'"sharding_ignore_msb":', b'"sharding_ignore_msb":0', 1)),
        ("token out of range", raw.replace(b"9223372036854775807", b"9223372036854775808")),
        (
            "ignore_msb out of range",
            raw.replace(b'"sharding_ignore_msb":', b'"sharding_ignore_msb":9999', 1),
        ),
        ("no closing bracket", raw[:-2]),
        ("not hex", raw[:first] + b"zz" + raw[first + 2 :]),
        ("a trailing comma", raw[:-2] + b",]}"),
    ]


@pytest.mark.parametrize(
    ("name", "raw"), _compact_variants(), ids=[n for n, _ in _compact_variants()]
)
def test_every_other_spelling_reads_as_the_json_parser_reads_it(name: str, raw: bytes) -> None:
    """Whatever the layout reader declines or rejects, the result (or the error, word for
    word) is the JSON parser's."""
    _read_both_ways(raw)


def test_numbers_out_of_range_are_named_as_the_json_parser_names_them() -> None:
    raw = description_bytes(_random_columns(random.Random(11), entries=4))
    too_big = raw.replace(b"9223372036854775807", b"9223372036854775808")
    with pytest.raises(InvalidDescription, match=r"entries\[3\]\.token_range_end"):
        columns_from_bytes(too_big)
    wide = raw.replace(b'"sharding_ignore_msb":', b'"sharding_ignore_msb":9999', 1)
    with pytest.raises(InvalidDescription, match=r"entries\[0\]\.sharding_ignore_msb"):
        columns_from_bytes(wide)
