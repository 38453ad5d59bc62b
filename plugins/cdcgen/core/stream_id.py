"""CDC stream IDs: the 16-byte partition keys of every CDC log table.

Layout (ScyllaDB ``cdc/generation.cc``, ``stream_id::stream_id``): bytes 0..7 are the
stream's token, big-endian signed; bytes 8..15 are a big-endian unsigned "low qword" with
the version in bits [0, 4), the vnode index in bits [4, 26) and random bits in [26, 64).
The constants below are the ones in that file (the seed document's diagram is off by one).

The token inside the ID is what places the stream on the ring: the CDC partitioner
(``com.scylladb.dht.CDCPartitioner``) reads it instead of hashing the key, which is why the
Python driver, which hashes, routes per-stream reads to the wrong replicas.
"""

from __future__ import annotations

import random as random_module
import re
from dataclasses import dataclass
from typing import Self

from cdcgen.core.errors import InvalidStreamId
from cdcgen.core.tokens import MIN_TOKEN, check_token

STREAM_ID_SIZE = 16
VERSION_1 = 1
VERSION_BITS = 4
INDEX_BITS = 22
RANDOM_BITS = 38
VERSION_SHIFT = 0
INDEX_SHIFT = VERSION_SHIFT + VERSION_BITS
RANDOM_SHIFT = INDEX_SHIFT + INDEX_BITS
MAX_INDEX = (1 << INDEX_BITS) - 1
MAX_RANDOM = (1 << RANDOM_BITS) - 1

_HEX = re.compile(r"[0-9a-fA-F]*")


@dataclass(frozen=True, order=True, slots=True, repr=False)
class StreamId:
    """One CDC stream ID, validated like ScyllaDB's ``stream_id(bytes)`` constructor.

    Ordering compares the raw bytes: that is how CQL sorts a ``set<blob>``, so sets of
    stream IDs read from ScyllaDB come back in this order (which is *not* shard order).
    """

    raw: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.raw, bytes):
            raise InvalidStreamId(
                f"CDC stream id must be bytes, got {type(self.raw).__name__}: {self.raw!r}"
            )
        if len(self.raw) != STREAM_ID_SIZE:
            raise InvalidStreamId(
                f"CDC stream id {self.raw.hex()} is {len(self.raw)} bytes, "
                f"expected {STREAM_ID_SIZE}"
            )
        version = self.raw[15] & ((1 << VERSION_BITS) - 1)
        if version > VERSION_1:
            # ScyllaDB rejects these too; older unversioned IDs (version 0) pass.
            raise InvalidStreamId(f"Unknown CDC stream id version {version} in {self.raw.hex()}")

    @classmethod
    def from_hex(cls, text: str) -> Self:
        """Parse 32 hex digits, optionally prefixed with ``0x`` as cqlsh prints blobs."""
        if not isinstance(text, str):
            raise InvalidStreamId(f"CDC stream id {text!r} is not a string")
        digits = text.strip()
        if digits[:2] in ("0x", "0X"):
            digits = digits[2:]
        if not _HEX.fullmatch(digits) or len(digits) % 2:
            raise InvalidStreamId(f"CDC stream id {text!r} is not hex")
        size = len(digits) // 2
        if size != STREAM_ID_SIZE:
            raise InvalidStreamId(
                f"CDC stream id {text!r} is {size} bytes, expected {STREAM_ID_SIZE}"
            )
        return cls(bytes.fromhex(digits))

    @classmethod
    def from_parts(cls, token: int, index: int, random: int, version: int = VERSION_1) -> Self:
        """Compose an ID the way ``stream_id::stream_id(token, vnode_index)`` does.

        Unlike ScyllaDB, which masks silently, out-of-range parts are errors: a masked
        index would no longer name the vnode the stream belongs to.
        """
        check_token(token, "stream token")
        for name, value, top in (
            ("index", index, MAX_INDEX),
            ("random", random, MAX_RANDOM),
            ("version", version, (1 << VERSION_BITS) - 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
                raise InvalidStreamId(f"stream id {name} {value!r} is not in [0, {top}]")
        low_qword = (version << VERSION_SHIFT) | (index << INDEX_SHIFT) | (random << RANDOM_SHIFT)
        return cls(token.to_bytes(8, "big", signed=True) + low_qword.to_bytes(8, "big"))

    @property
    def token(self) -> int:
        """The stream's token: where the CDC partitioner puts this log partition."""
        return int.from_bytes(self.raw[:8], "big", signed=True)

    @property
    def _low_qword(self) -> int:
        return int.from_bytes(self.raw[8:], "big")

    @property
    def version(self) -> int:
        return (self._low_qword >> VERSION_SHIFT) & ((1 << VERSION_BITS) - 1)

    @property
    def index(self) -> int:
        """Index of the vnode (generation entry) the stream was created for."""
        return (self._low_qword >> INDEX_SHIFT) & MAX_INDEX

    @property
    def random(self) -> int:
        """Random bits that make IDs of successive generations differ."""
        return (self._low_qword >> RANDOM_SHIFT) & MAX_RANDOM

    @property
    def hex(self) -> str:
        """32 lowercase hex digits, no prefix."""
        return self.raw.hex()

    def __bytes__(self) -> bytes:
        return self.raw

    def __str__(self) -> str:
        return self.raw.hex()

    def __repr__(self) -> str:
        return f"StreamId({self.raw.hex()!r})"


def cdc_partitioner_token(blob: bytes) -> int:
    """The token ``CDCPartitioner`` gives a ``cdc$stream_id`` value.

    The first 8 bytes as a signed big-endian int; a blob that is not 16 bytes maps to the
    minimum token (``cdc/cdc_partitioner.cc``), the same as ScyllaDB.
    """
    if len(blob) != STREAM_ID_SIZE:
        return MIN_TOKEN
    return int.from_bytes(blob[:8], "big", signed=True)


def new_stream_id(token: int, index: int, rng: random_module.Random) -> StreamId:
    """A fresh version-1 stream ID for ``token`` in vnode ``index``, with 38 random bits.

    The caller passes the generator so generations are reproducible from a seed.
    """
    return StreamId.from_parts(token, index, rng.getrandbits(RANDOM_BITS))
