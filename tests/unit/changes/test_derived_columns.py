"""Per-row rules computed over whole batches agree, row for row, with their references:
Murmur3 with the driver's ``murmur3``, base tokens with the driver's serialization,
``cdc$time`` with the ``uuid`` module, operation names with the scalar decoder."""

from __future__ import annotations

import random
import uuid

import numpy as np
import pytest
from cassandra import cqltypes
from cassandra.metadata import Murmur3Token
from cassandra.murmur3 import murmur3

from cdcgen.changes.base_tokens import BaseKeyHasher
from cdcgen.changes.derived_columns import operation_names, timeuuid_texts
from cdcgen.core.cdc_log import (
    GREGORIAN_OFFSET_100NS,
    micros_of_timeuuids,
    operation_name,
    timeuuid_bytes,
    timeuuid_from_micros,
)
from cdcgen.core.murmur3 import murmur3_tokens

MIN_TOKEN, MAX_TOKEN = -(2**63), 2**63 - 1


def reference_token(key: bytes) -> int:
    token = int(murmur3(key))
    return MAX_TOKEN if token == MIN_TOKEN else token


def test_murmur3_of_every_length_matches_the_driver() -> None:
    rng = random.Random(7)
    keys = [rng.randbytes(length) for length in range(80) for _ in range(25)]
    # Tail bytes >= 0x80 are where Cassandra's variant differs from MurmurHash3.
    keys += [bytes([byte]) * length for byte in (0x00, 0x7F, 0x80, 0xFF) for length in range(40)]
    rng.shuffle(keys)
    assert murmur3_tokens(keys).tolist() == [reference_token(key) for key in keys]
    assert murmur3_tokens([]).tolist() == []


@pytest.mark.parametrize(
    ("cqltype", "values"),
    [
        (cqltypes.ByteType, [-128, -1, 0, 1, 127]),
        (cqltypes.ShortType, [-32768, -1, 0, 7, 32767]),
        (cqltypes.Int32Type, [-(2**31), -1, 0, 1, 2**31 - 1, 123456789]),
        (cqltypes.LongType, [-(2**63), -1, 0, 1, 2**63 - 1]),
        (cqltypes.UTF8Type, ["", "a", "ö" * 9, "key-" * 10]),
        (cqltypes.UUIDType, [uuid.UUID(int=0), uuid.UUID(int=2**128 - 1)]),
    ],
)
def test_base_tokens_match_the_drivers_routing_key(cqltype: type, values: list[object]) -> None:
    hasher = BaseKeyHasher([cqltype], 4)
    expected = [Murmur3Token.from_key(cqltype.serialize(v, 4)).value for v in values]
    assert hasher.tokens([values]).to_pylist() == expected
    with_null = hasher.tokens([[*values, None]]).to_pylist()
    assert with_null == [*expected, None]


def test_compound_base_tokens_compose_their_components() -> None:
    types = [cqltypes.LongType, cqltypes.UTF8Type, cqltypes.Int32Type]
    rows = [(1, "a", 2), (-5, "", 0), (2**40, "ü" * 30, -1), (3, None, 4)]
    hasher = BaseKeyHasher(types, 4)
    expected = []
    for row in rows:
        if None in row:
            expected.append(None)
            continue
        parts = [t.serialize(v, 4) for t, v in zip(types, row, strict=True)]
        key = b"".join(len(p).to_bytes(2, "big") + p + b"\x00" for p in parts)
        expected.append(Murmur3Token.from_key(key).value)
    assert hasher.tokens(list(zip(*rows, strict=True))).to_pylist() == expected


def test_write_times_of_timeuuids() -> None:
    rng = random.Random(3)
    micros = [0, 1, -1, 1_795_391_999_999_000, -(GREGORIAN_OFFSET_100NS // 10)]
    micros += [rng.randrange(-(2**50), 2**56) for _ in range(500)]
    stamps = [timeuuid_from_micros(m, rng) for m in micros]
    assert micros_of_timeuuids(timeuuid_bytes(stamps)).tolist() == micros
    assert [(s.time - GREGORIAN_OFFSET_100NS) // 10 for s in stamps] == micros


def test_a_uuid_of_another_version_is_refused_by_value() -> None:
    stray = uuid.UUID("156d7a6f-6dbf-44a4-b462-e75dcff32ebd")
    stamps = [timeuuid_from_micros(1, random.Random(1)), stray]
    with pytest.raises(ValueError, match=f"{stray} is not a time UUID \\(version 4\\)"):
        micros_of_timeuuids(timeuuid_bytes(stamps))


def test_timeuuid_texts_are_the_canonical_form() -> None:
    rng = random.Random(5)
    values = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(300)]
    values += [uuid.UUID(int=0), uuid.UUID(int=2**128 - 1), uuid.uuid1()]
    texts = timeuuid_texts(timeuuid_bytes(values))
    assert texts.to_pylist() == [str(v) for v in values]
    assert timeuuid_texts(np.empty((0, 16), np.uint8)).to_pylist() == []


def test_operation_names_of_a_batch() -> None:
    codes = [2, 1, None, 42, 9, 2, 0, -3]
    assert operation_names(codes).to_pylist() == [operation_name(c) for c in codes]
    assert operation_names([None, None]).to_pylist() == [None, None]
    assert operation_names([]).to_pylist() == []
