"""The ``base_token`` column: Murmur3 of each row's base partition key, a batch at a time.

Keys are serialized with the driver's own types (exactly what the driver does for a
routing key) and, for a compound key, composed as Cassandra does: per component a
2-byte length, the bytes, a 0x00 byte. A single integer key column, the common case,
is serialized by numpy in one step; any other key is serialized value by value and the
hashing is vectorised either way (:mod:`cdcgen.core.murmur3`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cdcgen.core.murmur3 import fixed_length_tokens, murmur3_tokens

if TYPE_CHECKING:
    import pyarrow as pa

#: Big-endian numpy types of the CQL integer types, as the driver serializes them.
_INTEGER_BYTES = {"tinyint": ">i1", "smallint": ">i2", "int": ">i4", "bigint": ">i8"}


class BaseKeyHasher:
    """Tokens of base partition keys from the log row's key columns.

    ``key_types`` are the driver's CQL types of the partition key columns, in key order.
    """

    def __init__(self, key_types: Sequence[Any], protocol: int) -> None:
        self._types = list(key_types)
        self._protocol = protocol
        names = [str(getattr(t, "typename", "")) for t in self._types]
        self._integer = _INTEGER_BYTES.get(names[0]) if len(names) == 1 else None

    def key(self, values: Sequence[Any]) -> bytes | None:
        """The bytes Murmur3 hashes for one key; ``None`` if a component is null."""
        if any(v is None for v in values):
            return None
        parts: list[bytes] = [
            t.serialize(v, self._protocol) for t, v in zip(self._types, values, strict=True)
        ]
        if len(parts) == 1:
            return parts[0]
        return b"".join(len(p).to_bytes(2, "big") + p + b"\x00" for p in parts)

    def tokens(self, columns: Sequence[Sequence[Any]]) -> pa.Array:
        """The token of each row's key (``columns``: one value sequence per key column),
        null where a component is null."""
        import pyarrow as pa

        if self._integer is not None and None not in columns[0]:
            values = np.asarray(columns[0], dtype=np.int64).astype(self._integer)
            matrix = values.view(np.uint8).reshape(len(values), values.itemsize)
            return pa.array(fixed_length_tokens(matrix), type=pa.int64())
        keys = [self.key(values) for values in zip(*columns, strict=True)]
        present = [key for key in keys if key is not None]
        if len(present) == len(keys):
            return pa.array(murmur3_tokens(present), type=pa.int64())
        hashed = iter(murmur3_tokens(present).tolist())
        return pa.array([None if key is None else next(hashed) for key in keys], pa.int64())
