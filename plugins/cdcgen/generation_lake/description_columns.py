"""A topology description as flat arrays that may break every rule: the input to validation.

:class:`cdcgen.core.topology.TopologyDescription` and
:class:`cdcgen.core.generation_arrays.GenerationArrays` refuse what ScyllaDB's lookup
cannot use (unsorted range ends, empty entries, 15-byte or version-2 stream IDs). That is
right for the pipeline's core, but the validation step must *see* such a description to
say precisely what is wrong with it, so this module keeps the raw shape: per entry its
range end, ignore_msb and a slice of stream blobs of any length. Its JSON form is
:mod:`cdcgen.generation_lake.description_json`.
"""

from __future__ import annotations

import binascii
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from cdcgen.core.errors import InvalidDescription
from cdcgen.core.gc_pause import paused_collections
from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.stored_arrays import arrays_from_stored
from cdcgen.core.stream_id import STREAM_ID_SIZE, StreamId
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN
from cdcgen.core.topology import TokenRange, TopologyDescription
from cdcgen.core.user_text import echo

Int64Array = npt.NDArray[np.int64]
ByteMatrix = npt.NDArray[np.uint8]

_INT16_MIN, _INT16_MAX = -(2**15), 2**15 - 1
#: A 16-byte blob as one numpy item whose ``tolist()`` is a ``bytes`` object (``S16``
#: would drop trailing zero bytes).
_BLOB16 = np.dtype((np.void, STREAM_ID_SIZE))


@dataclass(frozen=True, eq=False)
class DescriptionColumns:
    """Entries ``i`` = ``range_ends[i]``, ``ignore_msb[i]`` and the stream rows
    ``offsets[i]:offsets[i + 1]``; stream row ``r`` is ``blob_data[blob_offsets[r]:
    blob_offsets[r + 1]]`` (normally 16 bytes). Only the shapes are checked here.
    """

    range_ends: Int64Array
    ignore_msb: Int64Array
    offsets: Int64Array
    blob_offsets: Int64Array
    blob_data: bytes

    def __post_init__(self) -> None:
        entries = self.range_ends.shape[0]
        if self.range_ends.ndim != 1 or self.ignore_msb.shape != (entries,):
            raise InvalidDescription("range_ends and ignore_msb need one value per entry")
        if self.offsets.shape != (entries + 1,) or (entries and int(self.offsets[0]) != 0):
            raise InvalidDescription("offsets need one value per entry + 1, starting at 0")
        if np.any(np.diff(self.offsets) < 0):
            raise InvalidDescription("offsets must not decrease")
        streams = int(self.offsets[-1]) if entries else 0
        if self.blob_offsets.shape != (streams + 1,) or int(self.blob_offsets[-1]) != len(
            self.blob_data
        ):
            raise InvalidDescription(
                "blob_offsets need one value per stream + 1, ending at the data size"
            )

    # --- shape ----------------------------------------------------------------------

    @property
    def entry_count(self) -> int:
        return int(self.range_ends.shape[0])

    @property
    def stream_count(self) -> int:
        return int(self.blob_offsets.shape[0]) - 1

    def streams_per_entry(self) -> Int64Array:
        counts: Int64Array = np.diff(self.offsets)
        return counts

    def blob_lengths(self) -> Int64Array:
        lengths: Int64Array = np.diff(self.blob_offsets)
        return lengths

    def all_stream_ids_16_bytes(self) -> bool:
        return bool(np.all(self.blob_lengths() == STREAM_ID_SIZE))

    def id_matrix(self) -> tuple[ByteMatrix, npt.NDArray[np.bool_]]:
        """Every stream as a 16-byte row, plus a mask of the rows that really are 16 bytes.

        Rows of another length are zero-filled: callers must not read meaning into them.
        """
        count = self.stream_count
        data = np.frombuffer(self.blob_data, dtype=np.uint8)
        if self.all_stream_ids_16_bytes():
            return data.reshape(count, STREAM_ID_SIZE), np.ones(count, dtype=np.bool_)
        lengths = self.blob_lengths()
        valid = lengths == STREAM_ID_SIZE
        matrix = np.zeros((count, STREAM_ID_SIZE), dtype=np.uint8)
        rows = np.flatnonzero(valid)
        if rows.size:
            gather = self.blob_offsets[rows][:, None] + np.arange(STREAM_ID_SIZE)
            matrix[rows] = data[gather]
        return matrix, valid

    def stream_hex(self) -> list[str]:
        """Lowercase hex of every stream blob, in row order."""
        if self.all_stream_ids_16_bytes():
            text = binascii.hexlify(self.blob_data).decode("ascii")
            width = 2 * STREAM_ID_SIZE
            return [text[i : i + width] for i in range(0, len(text), width)]
        starts = self.blob_offsets.tolist()
        return [self.blob_data[a:b].hex() for a, b in itertools.pairwise(starts)]

    # --- conversions ----------------------------------------------------------------

    @classmethod
    def from_arrays(cls, arrays: GenerationArrays) -> DescriptionColumns:
        """From the core's vectorized builder: no per-stream Python objects at all."""
        count = arrays.stream_count
        return cls(
            range_ends=arrays.range_ends.astype(np.int64, copy=False),
            ignore_msb=arrays.ignore_msb.astype(np.int64, copy=False),
            offsets=arrays.offsets.astype(np.int64, copy=False),
            blob_offsets=np.arange(0, STREAM_ID_SIZE * (count + 1), STREAM_ID_SIZE, dtype=np.int64),
            blob_data=np.ascontiguousarray(arrays.stream_bytes).tobytes(),
        )

    @classmethod
    def from_description(cls, description: TopologyDescription) -> DescriptionColumns:
        return cls.from_arrays(GenerationArrays.from_description(description))

    @classmethod
    def from_blobs(cls, entries: list[tuple[int, int, list[bytes]]]) -> DescriptionColumns:
        """From ``(range_end, ignore_msb, [stream blob, ...])`` triples, kept in the given order.

        What a source reader or a test has before any rule is checked.
        """
        ends = np.array(
            [token_value(e[0], f"entries[{i}].token_range_end") for i, e in enumerate(entries)],
            dtype=np.int64,
        )
        ignore = np.array(
            [
                ignore_msb_value(e[1], f"entries[{i}].sharding_ignore_msb")
                for i, e in enumerate(entries)
            ],
            dtype=np.int64,
        )
        counts = np.array([len(e[2]) for e in entries], dtype=np.int64)
        blobs = [bytes(blob) for e in entries for blob in e[2]]
        return cls.build(ends, ignore, counts, blobs)

    @classmethod
    def build(
        cls, ends: Int64Array, ignore: Int64Array, counts: Int64Array, blobs: list[bytes]
    ) -> DescriptionColumns:
        offsets = np.zeros(ends.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        blob_offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum(
            np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs)), out=blob_offsets[1:]
        )
        return cls(ends, ignore, offsets, blob_offsets, b"".join(blobs))

    def stream_rows(self) -> list[tuple[int, list[bytes]]]:
        """``(range_end, [stream blob, ...])`` per entry: the rows a publisher writes.

        No per-stream Python work: for a description the suites already validated, this
        is what lets 1.6 million streams be published without a long wait on object
        building. When every blob is 16 bytes (always, once validated), numpy's
        ``tolist`` makes the ``bytes`` objects in one C loop, and each entry takes a
        slice of that list; without collections meanwhile (:func:`paused_collections`)
        that is much quicker than a slice per blob.
        """
        ends = self.range_ends.tolist()
        offsets = self.offsets.tolist()
        with paused_collections():
            if self.all_stream_ids_16_bytes():
                blobs: list[bytes] = np.frombuffer(self.blob_data, dtype=_BLOB16).tolist()
            else:
                data = self.blob_data
                blobs = [data[a:b] for a, b in itertools.pairwise(self.blob_offsets.tolist())]
            return [(end, blobs[offsets[i] : offsets[i + 1]]) for i, end in enumerate(ends)]

    def to_arrays(self) -> GenerationArrays | None:
        """The same description as the core's arrays when :meth:`to_description` would
        accept it (no per-stream objects), else None."""
        ends = self.range_ends
        if not self.all_stream_ids_16_bytes() or np.any(ends[1:] <= ends[:-1]):
            return None
        return arrays_from_stored(
            self.range_ends,
            self.ignore_msb,
            self.streams_per_entry(),
            self.id_matrix()[0],
            shard_ordered=True,
        )

    def to_description(self) -> TopologyDescription:
        """The strict core object (for publishing); raises if a rule is broken.

        Builds one :class:`StreamId` per stream, so it is slow for millions of streams.
        """
        starts = self.blob_offsets.tolist()
        offsets = self.offsets.tolist()
        data = self.blob_data
        entries = []
        try:
            for i, (end, ignore) in enumerate(
                zip(self.range_ends.tolist(), self.ignore_msb.tolist(), strict=True)
            ):
                rows = range(offsets[i], offsets[i + 1])
                streams = tuple(StreamId(data[starts[r] : starts[r + 1]]) for r in rows)
                entries.append(TokenRange(end, streams, ignore))
            return TopologyDescription(tuple(entries))
        except ValueError as exc:
            raise InvalidDescription(str(exc)) from exc


def hex_matrix(ids: ByteMatrix) -> ByteMatrix:
    """ASCII hex digits of each 16-byte row: a read-only (n, 32) uint8 matrix.

    ``binascii.hexlify`` makes them in one C pass, much faster than numpy lookups of
    each nibble.
    """
    digits = binascii.hexlify(np.ascontiguousarray(ids, dtype=np.uint8).data)
    matrix: ByteMatrix = np.frombuffer(digits, dtype=np.uint8).reshape(
        ids.shape[0], 2 * ids.shape[1]
    )
    return matrix


def token_value(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidDescription(f"{where}: expected an integer, got {value!r}")
    if not MIN_TOKEN <= value <= MAX_TOKEN:
        raise InvalidDescription(f"{where}: {echo(value)} is not a signed 64-bit token")
    return value


def ignore_msb_value(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidDescription(f"{where}: expected an integer, got {value!r}")
    if not _INT16_MIN <= value <= _INT16_MAX:
        raise InvalidDescription(f"{where}: {echo(value)} is out of range")
    return value
