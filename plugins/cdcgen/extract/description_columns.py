"""A topology description as flat arrays that may break every rule: the input to validation.

:class:`cdcgen.core.topology.TopologyDescription` and
:class:`cdcgen.core.generation_arrays.GenerationArrays` refuse what ScyllaDB's lookup
cannot use (unsorted range ends, empty entries, 15-byte or version-2 stream IDs). That is
right for the pipeline's core, but the validation step must *see* such a description to
say precisely what is wrong with it, so this module keeps the raw shape: per entry its
range end, ignore_msb and a slice of stream blobs of any length. It also reads and writes
the description JSON (``{"entries": [{"token_range_end", "sharding_ignore_msb",
"streams"}]}``) without building one Python object per stream, which is what makes a
1.6-million-stream generation cost seconds rather than minutes.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.stream_id import STREAM_ID_SIZE, StreamId
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN
from cdcgen.core.topology import (
    InvalidDescription,
    TokenRange,
    TopologyDescription,
)

Int64Array = npt.NDArray[np.int64]
ByteMatrix = npt.NDArray[np.uint8]

_INT16_MIN, _INT16_MAX = -(2**15), 2**15 - 1
_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


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
            text = hex_matrix(self.id_matrix()[0]).tobytes().decode("ascii")
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
            [_int64(e[0], f"entries[{i}].token_range_end") for i, e in enumerate(entries)],
            dtype=np.int64,
        )
        ignore = np.array(
            [_int16(e[1], f"entries[{i}].sharding_ignore_msb") for i, e in enumerate(entries)],
            dtype=np.int64,
        )
        counts = np.array([len(e[2]) for e in entries], dtype=np.int64)
        blobs = [bytes(blob) for e in entries for blob in e[2]]
        return cls._build(ends, ignore, counts, blobs)

    @classmethod
    def _build(
        cls, ends: Int64Array, ignore: Int64Array, counts: Int64Array, blobs: list[bytes]
    ) -> DescriptionColumns:
        offsets = np.zeros(ends.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        blob_offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum(
            np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs)), out=blob_offsets[1:]
        )
        return cls(ends, ignore, offsets, blob_offsets, b"".join(blobs))

    @classmethod
    def from_json(cls, obj: Any) -> DescriptionColumns:
        """Parse the description JSON; only what cannot be represented is an error.

        Non-hex text, missing fields and non-integers raise :class:`InvalidDescription`
        (naming the entry). Unsorted ends, empty entries, IDs of the wrong length or version
        are kept, for the validation suites to report.
        """
        if not isinstance(obj, Mapping) or not isinstance(obj.get("entries"), list):
            raise InvalidDescription('description: expected an object with an "entries" list')
        raw_entries: list[Any] = obj["entries"]
        ends: list[int] = []
        ignores: list[int] = []
        counts: list[int] = []
        texts: list[str] = []
        for i, entry in enumerate(raw_entries):
            where = f"entries[{i}]"
            if not isinstance(entry, Mapping):
                raise InvalidDescription(f"{where}: expected an object")
            for name in ("token_range_end", "sharding_ignore_msb", "streams"):
                if name not in entry:
                    raise InvalidDescription(f"{where}: missing field {name!r}")
            ends.append(_int64(entry["token_range_end"], f"{where}.token_range_end"))
            ignores.append(_int16(entry["sharding_ignore_msb"], f"{where}.sharding_ignore_msb"))
            streams = entry["streams"]
            if not isinstance(streams, list) or not all(isinstance(s, str) for s in streams):
                raise InvalidDescription(f"{where}.streams: expected a list of hex strings")
            counts.append(len(streams))
            texts.extend(streams)
        end_array = np.array(ends, dtype=np.int64)
        ignore_array = np.array(ignores, dtype=np.int64)
        count_array = np.array(counts, dtype=np.int64)
        width = 2 * STREAM_ID_SIZE
        if all(len(text) == width for text in texts):
            try:
                data = bytes.fromhex("".join(texts))
            except ValueError:
                data = b""  # find the culprit below for a precise message
            else:
                offsets = np.zeros(end_array.shape[0] + 1, dtype=np.int64)
                np.cumsum(count_array, out=offsets[1:])
                blob_offsets = np.arange(
                    0, STREAM_ID_SIZE * (len(texts) + 1), STREAM_ID_SIZE, dtype=np.int64
                )
                return cls(end_array, ignore_array, offsets, blob_offsets, data)
        blobs = []
        row = 0
        for i, count in enumerate(counts):
            for j in range(count):
                text = texts[row]
                row += 1
                digits = text[2:] if text[:2] in ("0x", "0X") else text
                try:
                    blobs.append(bytes.fromhex(digits))
                except ValueError:
                    raise InvalidDescription(
                        f"entries[{i}].streams[{j}]: {text!r} is not hex"
                    ) from None
        return cls._build(end_array, ignore_array, count_array, blobs)

    def to_json(self) -> dict[str, Any]:
        """The same JSON as :func:`cdcgen.core.topology.description_to_json`."""
        hexes = self.stream_hex()
        offsets = self.offsets.tolist()
        return {
            "entries": [
                {
                    "token_range_end": end,
                    "sharding_ignore_msb": ignore,
                    "streams": hexes[offsets[i] : offsets[i + 1]],
                }
                for i, (end, ignore) in enumerate(
                    zip(self.range_ends.tolist(), self.ignore_msb.tolist(), strict=True)
                )
            ]
        }

    def stream_rows(self) -> list[tuple[int, list[bytes]]]:
        """``(range_end, [stream blob, ...])`` per entry: the rows a publisher writes.

        No per-stream objects: for a description the suites already validated, this is
        what lets 1.6 million streams be published without a minute of object building.
        """
        data = self.blob_data
        starts = self.blob_offsets.tolist()
        offsets = self.offsets.tolist()
        return [
            (end, [data[starts[r] : starts[r + 1]] for r in range(offsets[i], offsets[i + 1])])
            for i, end in enumerate(self.range_ends.tolist())
        ]

    def to_description(self) -> TopologyDescription:
        """The strict core object (for publishing); raises if a rule is broken.

        Builds one :class:`StreamId` per stream, so it costs about a second per million.
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
    """ASCII hex digits of each 16-byte row: a (n, 32) uint8 matrix, computed vectorized."""
    out = np.empty((ids.shape[0], 2 * ids.shape[1]), dtype=np.uint8)
    out[:, 0::2] = _HEX_DIGITS[ids >> 4]
    out[:, 1::2] = _HEX_DIGITS[ids & 0x0F]
    return out


def read_description_file(path: Path | str) -> DescriptionColumns:
    """Load a description JSON file into columns (``InvalidDescription`` names the problem)."""
    try:
        with open(path, encoding="utf-8") as handle:
            obj = json.load(handle)
    except json.JSONDecodeError as exc:
        raise InvalidDescription(f"{path} is not valid JSON: {exc}") from exc
    return DescriptionColumns.from_json(obj)


def write_description_file(path: Path, columns: DescriptionColumns) -> None:
    """Write the description JSON atomically (temp file + rename): readers never see half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(columns.to_json(), handle, separators=(",", ":"))
    temporary.replace(path)


def _int64(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidDescription(f"{where}: expected an integer, got {value!r}")
    if not MIN_TOKEN <= value <= MAX_TOKEN:
        raise InvalidDescription(f"{where}: {value} is not a signed 64-bit token")
    return value


def _int16(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidDescription(f"{where}: expected an integer, got {value!r}")
    if not _INT16_MIN <= value <= _INT16_MAX:
        raise InvalidDescription(f"{where}: {value} is out of range")
    return value
