"""The Murmur3 token of a base-table partition key, exactly as ``token(pk)`` computes it.

The emulator must put each write's log rows into the stream the generation maps the
*base* partition's token to, so the token must match Cassandra's and ScyllaDB's bit for
bit: Murmur3 x64_128 (seed 0) of the serialized key, first 64 bits as a signed long,
``Long.MIN_VALUE`` normalised to ``Long.MAX_VALUE`` (cassandra-driver's ``murmur3``
returns the raw value; its ``Murmur3Token`` normalises). A compound key is hashed in
its composite form: per component a 2-byte length, the bytes, a 0x00 byte.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from cassandra.murmur3 import murmur3

from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN

_SIMPLE_SERIALIZERS: dict[str, Callable[[Any], bytes]] = {
    "int": lambda v: struct.pack(">i", v),
    "bigint": lambda v: struct.pack(">q", v),
    "smallint": lambda v: struct.pack(">h", v),
    "tinyint": lambda v: struct.pack(">b", v),
    "text": lambda v: v.encode("utf-8"),
    "varchar": lambda v: v.encode("utf-8"),
    "ascii": lambda v: v.encode("ascii"),
    "blob": bytes,
    "uuid": lambda v: v.bytes if isinstance(v, uuid.UUID) else uuid.UUID(str(v)).bytes,
    "timeuuid": lambda v: v.bytes if isinstance(v, uuid.UUID) else uuid.UUID(str(v)).bytes,
    "boolean": lambda v: b"\x01" if v else b"\x00",
}

PARTITION_KEY_TYPES = frozenset(_SIMPLE_SERIALIZERS)


class UnsupportedKeyType(ValueError):
    """A partition key type the emulator cannot serialize."""


def serialize_key_component(cql_type: str, value: Any) -> bytes:
    """The CQL serialized form of one partition key value."""
    try:
        serializer = _SIMPLE_SERIALIZERS[cql_type]
    except KeyError:
        raise UnsupportedKeyType(
            f"partition key type {cql_type!r} is not supported; use one of "
            + ", ".join(sorted(_SIMPLE_SERIALIZERS))
        ) from None
    return serializer(value)


def serialize_partition_key(types: Sequence[str], values: Sequence[Any]) -> bytes:
    """The bytes Murmur3 hashes: the value itself, or the composite form for compound keys."""
    if len(types) != len(values) or not types:
        raise ValueError(f"{len(types)} partition key types for {len(values)} values")
    if len(types) == 1:
        return serialize_key_component(types[0], values[0])
    parts = []
    for cql_type, value in zip(types, values, strict=True):
        component = serialize_key_component(cql_type, value)
        parts.append(struct.pack(">H", len(component)) + component + b"\x00")
    return b"".join(parts)


def token_of_bytes(key: bytes) -> int:
    """Murmur3Partitioner's token of serialized key bytes (MIN normalised to MAX)."""
    token = int(murmur3(key))
    return MAX_TOKEN if token == MIN_TOKEN else token


def partition_token(types: Sequence[str], values: Sequence[Any]) -> int:
    """``token(pk...)`` of a base-table row."""
    return token_of_bytes(serialize_partition_key(types, values))


def int_key_token(key: int) -> int:
    """``token(pk)`` of an ``int`` partition key (the workload's default table)."""
    return token_of_bytes(struct.pack(">i", key))
