"""Stream IDs: layout, validation, parsing, ordering and the CDC partitioner's token."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdcgen.core.errors import InvalidStreamId
from cdcgen.core.stream_id import StreamId, cdc_partitioner_token, new_stream_id
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN

tokens = st.integers(min_value=MIN_TOKEN, max_value=MAX_TOKEN)
indices = st.integers(min_value=0, max_value=2**22 - 1)
randoms = st.integers(min_value=0, max_value=2**38 - 1)
versions = st.integers(min_value=0, max_value=1)


def layout_by_bit_string(token: int, index: int, random_bits: int, version: int) -> bytes:
    """The documented layout written as bit strings, most significant bit first:
    64 token bits (two's complement), then 38 random, 22 index and 4 version bits.
    """
    bits = (
        format(token % 2**64, "064b")
        + format(random_bits, "038b")
        + format(index, "022b")
        + format(version, "04b")
    )
    return bytes(int(bits[i : i + 8], 2) for i in range(0, 128, 8))


def test_vector_from_java_driver_cdc_partitioner_test() -> None:
    """The Java driver's CDC partitioner test hashes key 0x0123456789ABCDEF|0xFFFFFFFFFFFFFFF1
    to token 0x0123456789ABCDEF; all index and random bits are set, version is 1."""
    stream = StreamId.from_hex("0123456789ABCDEFFFFFFFFFFFFFFFF1")
    assert stream.token == 0x0123456789ABCDEF
    assert stream.version == 1
    assert stream.index == 2**22 - 1
    assert stream.random == 2**38 - 1
    assert stream.hex == "0123456789abcdeffffffffffffffff1"
    assert cdc_partitioner_token(stream.raw) == 0x0123456789ABCDEF


def test_field_boundaries() -> None:
    # index 1 is bit 4 of the low qword; random bit 0 is bit 26.
    assert StreamId.from_parts(0, 1, 0).raw[8:] == (1 << 4 | 1).to_bytes(8, "big")
    assert StreamId.from_parts(0, 0, 1).raw[8:] == (1 << 26 | 1).to_bytes(8, "big")
    assert StreamId.from_parts(-1, 0, 0).raw[:8] == b"\xff" * 8
    assert StreamId.from_parts(MIN_TOKEN, 0, 0).raw[:8] == b"\x80" + b"\x00" * 7


@given(tokens, indices, randoms, versions)
def test_from_parts_matches_bit_layout_and_round_trips(
    token: int, index: int, random_bits: int, version: int
) -> None:
    stream = StreamId.from_parts(token, index, random_bits, version)
    assert stream.raw == layout_by_bit_string(token, index, random_bits, version)
    assert (stream.token, stream.index, stream.random, stream.version) == (
        token,
        index,
        random_bits,
        version,
    )
    assert StreamId.from_hex(stream.hex) == stream
    assert StreamId.from_hex("0x" + stream.hex.upper()) == stream
    assert len(stream.hex) == 32 and stream.hex == stream.hex.lower()


def test_version_above_one_is_rejected() -> None:
    # The example stream id in ScyllaDB's "Querying CDC Streams" page predates versioned
    # ids: its last nibble (version) is 3.
    with pytest.raises(
        InvalidStreamId,
        match="Unknown CDC stream id version 3 in 365fd1a9ae34373954529ac8169dfb93",
    ):
        StreamId.from_hex("0x365fd1a9ae34373954529ac8169dfb93")
    with pytest.raises(InvalidStreamId, match="version 15"):
        StreamId(bytes(15) + b"\x0f")


def test_version_zero_is_accepted() -> None:
    assert StreamId(bytes(16)).version == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("xyz", "is not hex"),
        ("0x12345", "is not hex"),
        ("00 11", "is not hex"),
        ("", "is 0 bytes, expected 16"),
        ("00" * 15, "is 15 bytes, expected 16"),
        ("0x" + "00" * 17, "is 17 bytes, expected 16"),
    ],
)
def test_from_hex_errors_name_the_problem_and_input(text: str, message: str) -> None:
    with pytest.raises(InvalidStreamId, match=message) as info:
        StreamId.from_hex(text)
    assert repr(text) in str(info.value)


def test_raw_must_be_16_bytes() -> None:
    with pytest.raises(InvalidStreamId, match="is 8 bytes, expected 16"):
        StreamId(bytes(8))
    with pytest.raises(InvalidStreamId, match="must be bytes"):
        StreamId(bytearray(16))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("token", "index", "random_bits"),
    [(2**63, 0, 0), (0, 2**22, 0), (0, -1, 0), (0, 0, 2**38)],
)
def test_from_parts_rejects_out_of_range_parts(token: int, index: int, random_bits: int) -> None:
    with pytest.raises(ValueError):
        StreamId.from_parts(token, index, random_bits)


@given(st.lists(st.binary(min_size=16, max_size=16), min_size=2, max_size=20))
def test_ordering_is_byte_order(blobs: list[bytes]) -> None:
    # Force version 1 so every blob is a valid id.
    valid = [blob[:15] + bytes([blob[15] & 0xF0 | 1]) for blob in blobs]
    streams = [StreamId(blob) for blob in valid]
    assert [s.raw for s in sorted(streams)] == sorted(valid)


@given(st.binary(min_size=0, max_size=40))
def test_cdc_partitioner_token(blob: bytes) -> None:
    expected = struct.unpack(">q", blob[:8])[0] if len(blob) == 16 else MIN_TOKEN
    assert cdc_partitioner_token(blob) == expected


def test_new_stream_id_draws_38_random_bits_reproducibly() -> None:
    first = new_stream_id(12345, 7, random.Random(42))
    again = new_stream_id(12345, 7, random.Random(42))
    assert first == again
    assert (first.token, first.index, first.version) == (12345, 7, 1)
    assert first.random == random.Random(42).getrandbits(38)


def test_str_and_repr_show_hex() -> None:
    stream = StreamId.from_parts(1, 2, 3)
    assert str(stream) == stream.hex
    assert repr(stream) == f"StreamId('{stream.hex}')"
    assert bytes(stream) == stream.raw
