"""The ``cdc`` schema extension: where ScyllaDB (4.0 and later) keeps a table's CDC options."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdcgen.core.cdc_extension import cdc_options_of, decode_cdc_extension, encode_cdc_extension
from cdcgen.core.errors import BadCdcExtension


def le32(n: int) -> bytes:
    return n.to_bytes(4, "little")


def sstring(text: str) -> bytes:
    return le32(len(text.encode())) + text.encode()


# cdc::options::to_map() of `WITH cdc = {'enabled': true}` (ttl 86400, delta full), as
# ser::serialize_to_buffer writes a std::map<sstring, sstring>: LE uint32 count, then
# each key and value as LE uint32 length + bytes, keys in std::map (sorted) order.
SCYLLA_DEFAULTS = {
    "delta": "full",
    "enabled": "true",
    "postimage": "false",
    "preimage": "false",
    "ttl": "86400",
}
BLOB = le32(5) + b"".join(sstring(k) + sstring(v) for k, v in SCYLLA_DEFAULTS.items())


def test_scyllas_bytes_decode_to_the_options() -> None:
    assert decode_cdc_extension(BLOB) == SCYLLA_DEFAULTS
    assert cdc_options_of({"cdc": BLOB, "scylla_encryption_options": b"\x00"}) == SCYLLA_DEFAULTS


def test_encoding_is_scyllas() -> None:
    assert encode_cdc_extension(dict(reversed(SCYLLA_DEFAULTS.items()))) == BLOB


def test_no_extension_means_no_options() -> None:
    assert cdc_options_of(None) == cdc_options_of({}) == decode_cdc_extension(le32(0)) == {}


@pytest.mark.parametrize("blob", [b"\x01", BLOB[:-1], BLOB + b"\x00", le32(1) + le32(99)])
def test_truncated_or_padded_bytes_are_refused(blob: bytes) -> None:
    with pytest.raises(BadCdcExtension):
        decode_cdc_extension(blob)


@given(st.dictionaries(st.text(max_size=20), st.text(max_size=40), max_size=8))
def test_round_trip(options: dict[str, str]) -> None:
    assert decode_cdc_extension(encode_cdc_extension(options)) == options
