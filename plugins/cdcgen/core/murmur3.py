"""Murmur3Partitioner tokens of many serialized keys at once (numpy, no per-key call).

The token of a base partition key is what the row checks map to a stream, and every
extracted row carries it (``base_token``). Hashing key by key through the driver's C
``murmur3`` costs a Python call, a serialization and a conversion per row, more than
the rest of a row's conversion together; here every key of one length is hashed in one
pass of array arithmetic.

The function is Cassandra's ``MurmurHash.hash3_x64_128`` with seed 0, first half as a
signed long, ``Long.MIN_VALUE`` normalised to ``Long.MAX_VALUE`` (the partitioner's
token), including its one quirk: the tail bytes (length mod 16) are read as *signed*
bytes and sign-extended before they are shifted and mixed, so keys with a byte >= 0x80
in their tail differ from the reference MurmurHash3. No maintained library hashes
Cassandra's variant over arrays; the driver's per-key ``murmur3`` is the reference the
tests compare this with, key for key, at every length.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
ByteMatrix = npt.NDArray[np.uint8]
_Words = npt.NDArray[np.uint64]

_C1 = np.uint64(0x87C37B91114253D5)
_C2 = np.uint64(0x4CF5AD432745937F)
_MIN_TOKEN = -(2**63)
_MAX_TOKEN = 2**63 - 1


def _rotl(x: _Words, r: int) -> _Words:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _fmix(k: _Words) -> _Words:
    k = k ^ (k >> np.uint64(33))
    k = k * np.uint64(0xFF51AFD7ED558CCD)
    k = k ^ (k >> np.uint64(33))
    k = k * np.uint64(0xC4CEB9FE1A85EC53)
    return k ^ (k >> np.uint64(33))


def _mix_k1(k1: _Words) -> _Words:
    return _rotl(k1 * _C1, 31) * _C2


def _mix_k2(k2: _Words) -> _Words:
    return _rotl(k2 * _C2, 33) * _C1


def _tail_word(tail: ByteMatrix) -> _Words:
    """Up to 8 tail bytes as Cassandra mixes them: each sign-extended, shifted, xored."""
    word = np.zeros(len(tail), dtype=np.uint64)
    for i in range(tail.shape[1]):
        signed = tail[:, i].view(np.int8).astype(np.int64).view(np.uint64)
        word ^= signed << np.uint64(8 * i)
    return word


def fixed_length_tokens(keys: ByteMatrix) -> IntArray:
    """The token of each row of ``keys`` (``n`` keys of one length, ``uint8[n, length]``)."""
    count, length = keys.shape
    h1 = np.zeros(count, dtype=np.uint64)
    h2 = np.zeros(count, dtype=np.uint64)
    blocks = length // 16
    if blocks:
        words = np.ascontiguousarray(keys[:, : blocks * 16]).view("<u8").astype(np.uint64)
        for block in range(blocks):
            h1 ^= _mix_k1(words[:, 2 * block])
            h1 = _rotl(h1, 27) + h2
            h1 = h1 * np.uint64(5) + np.uint64(0x52DCE729)
            h2 ^= _mix_k2(words[:, 2 * block + 1])
            h2 = _rotl(h2, 31) + h1
            h2 = h2 * np.uint64(5) + np.uint64(0x38495AB5)
    tail = keys[:, blocks * 16 :]
    if tail.shape[1] > 8:
        h2 ^= _mix_k2(_tail_word(tail[:, 8:]))
    if tail.shape[1]:
        h1 ^= _mix_k1(_tail_word(tail[:, :8]))
    h1 ^= np.uint64(length)
    h2 ^= np.uint64(length)
    h1 = h1 + h2
    h2 = h2 + h1
    h1 = _fmix(h1)
    h2 = _fmix(h2)
    tokens = (h1 + h2).view(np.int64)
    tokens[tokens == _MIN_TOKEN] = _MAX_TOKEN
    return tokens


def murmur3_tokens(keys: Sequence[bytes]) -> IntArray:
    """The token of each serialized key, keys of any lengths (hashed one length at a time)."""
    tokens = np.empty(len(keys), dtype=np.int64)
    if not keys:
        return tokens
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    for length in np.unique(lengths).tolist():
        where = np.flatnonzero(lengths == length)
        if len(where) == len(keys):
            joined = b"".join(keys)
        else:
            joined = b"".join([keys[i] for i in where.tolist()])
        matrix = np.frombuffer(joined, dtype=np.uint8).reshape(len(where), length)
        tokens[where] = fixed_length_tokens(matrix)
    return tokens
