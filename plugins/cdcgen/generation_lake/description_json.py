"""The description JSON (``{"entries": [{"token_range_end", "sharding_ignore_msb",
"streams"}]}``) to and from :class:`~cdcgen.generation_lake.description_columns.DescriptionColumns`.

Without one Python object per stream, which is what makes a 1.6-million-stream
generation cost seconds rather than minutes; the file is written atomically.
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from cdcgen.core.errors import InvalidDescription, UnreadableJson
from cdcgen.core.stream_id import STREAM_ID_SIZE
from cdcgen.core.topology_json import DescriptionJson, EntryJson
from cdcgen.core.user_text import load_json
from cdcgen.generation_lake.description_columns import (
    DescriptionColumns,
    hex_matrix,
    ignore_msb_value,
    token_value,
)

_HEAD = b'{"entries":['
_TAIL = b"]}"
_ENTRY_HEAD = b'{"token_range_end":%d,"sharding_ignore_msb":%d,"streams":['
#: One stream in the compact form: ``"<32 hex digits>",``.
_QUOTED_WIDTH = 2 * STREAM_ID_SIZE + 3
_JSON_INT = rb"(-?(?:0|[1-9][0-9]*))"
_ENTRY_HEAD_RE = re.compile(
    rb'\{"token_range_end":' + _JSON_INT + rb',"sharding_ignore_msb":' + _JSON_INT
    + rb',"streams":\['
)  # fmt: skip
_QUOTE, _COMMA = ord('"'), ord(",")


def columns_from_bytes(raw: bytes) -> DescriptionColumns:
    """Parse description JSON bytes, as :func:`columns_from_json` of ``json.loads``.

    The compact form that :func:`description_bytes` writes is read by its layout, in
    a fraction of the time and peak memory of the JSON parser and the columns built
    from its millions of strings, paid by every task that reads the generation.
    Anything else (another spelling, other ID lengths, an error to report) goes through
    the JSON parser.
    """
    columns = _compact_columns(raw)
    return columns if columns is not None else columns_from_json(json.loads(raw))


def _compact_columns(raw: bytes) -> DescriptionColumns | None:
    """The columns of exactly the compact form with 16-byte IDs, else None.

    Every byte is accounted for: the head, each entry's head (JSON integers), its
    streams as ``"<32 hex digits>"`` joined by commas, the closing brackets and the
    commas between entries. Such bytes are valid JSON with the meaning read here.
    """
    if not (raw.startswith(_HEAD) and raw.endswith(_TAIL)):
        return None
    ends: list[int] = []
    ignores: list[int] = []
    counts: list[int] = []
    segments: list[memoryview] = []  # joined below: the one copy
    view = memoryview(raw)
    pos, stop = len(_HEAD), len(raw) - len(_TAIL)
    entry_head = _ENTRY_HEAD_RE.match
    while pos < stop:
        if ends:
            if raw[pos] != _COMMA:
                return None
            pos += 1
        head = entry_head(raw, pos)
        if head is None:
            return None
        start = head.end()
        close = raw.find(b"]}", start)
        length = close - start
        if close < 0 or (length and length % _QUOTED_WIDTH != _QUOTED_WIDTH - 1):
            return None
        ends.append(int(head[1]))
        ignores.append(int(head[2]))
        counts.append((length + 1) // _QUOTED_WIDTH)
        if length:
            segments.append(view[start:close])
        pos = close + len(_TAIL)
    if pos != stop:
        return None
    streams = sum(counts)
    quoted = np.frombuffer(b",".join(segments) + b",", dtype=np.uint8)[: streams * _QUOTED_WIDTH]
    quoted = quoted.reshape(streams, _QUOTED_WIDTH)
    if not (
        (quoted[:, 0] == _QUOTE).all()
        and (quoted[:, -2] == _QUOTE).all()
        and (quoted[:, -1] == _COMMA).all()
    ):
        return None
    try:
        data = binascii.unhexlify(np.ascontiguousarray(quoted[:, 1:-2]).data)
    except binascii.Error:
        return None
    for i, (end, ignore) in enumerate(zip(ends, ignores, strict=True)):  # valid JSON: its errors
        token_value(end, f"entries[{i}].token_range_end")
        ignore_msb_value(ignore, f"entries[{i}].sharding_ignore_msb")
    offsets = np.zeros(len(ends) + 1, dtype=np.int64)
    np.cumsum(np.array(counts, dtype=np.int64), out=offsets[1:])
    blob_offsets = np.arange(0, STREAM_ID_SIZE * (streams + 1), STREAM_ID_SIZE, dtype=np.int64)
    return DescriptionColumns(
        np.array(ends, dtype=np.int64),
        np.array(ignores, dtype=np.int64),
        offsets,
        blob_offsets,
        data,
    )


def columns_from_json(obj: Any) -> DescriptionColumns:
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
        ends.append(token_value(entry["token_range_end"], f"{where}.token_range_end"))
        ignores.append(
            ignore_msb_value(entry["sharding_ignore_msb"], f"{where}.sharding_ignore_msb")
        )
        streams = entry["streams"]
        if not isinstance(streams, list):
            raise InvalidDescription(f"{where}.streams: expected a list of hex strings")
        counts.append(len(streams))
        texts.extend(streams)
    try:
        joined = "".join(texts)  # also the one check that every stream is a string
    except TypeError:
        raise InvalidDescription(_not_text(raw_entries)) from None
    end_array = np.array(ends, dtype=np.int64)
    ignore_array = np.array(ignores, dtype=np.int64)
    count_array = np.array(counts, dtype=np.int64)
    width = 2 * STREAM_ID_SIZE
    if set(map(len, texts)) <= {width}:  # (map and set loop in C)
        try:
            data = bytes.fromhex(joined)
        except ValueError:
            data = b""  # find the culprit below for a precise message
        if len(data) == STREAM_ID_SIZE * len(texts):  # fromhex skips spaces: "00 11 ..."
            offsets = np.zeros(end_array.shape[0] + 1, dtype=np.int64)
            np.cumsum(count_array, out=offsets[1:])
            blob_offsets = np.arange(
                0, STREAM_ID_SIZE * (len(texts) + 1), STREAM_ID_SIZE, dtype=np.int64
            )
            return DescriptionColumns(end_array, ignore_array, offsets, blob_offsets, data)
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
    return DescriptionColumns.build(end_array, ignore_array, count_array, blobs)


def _not_text(entries: list[Any]) -> str:
    """The message for the first entry whose streams are not all strings."""
    for i, entry in enumerate(entries):
        if not all(isinstance(stream, str) for stream in entry["streams"]):
            return f"entries[{i}].streams: expected a list of hex strings"
    return "streams: expected lists of hex strings"


def columns_to_json(columns: DescriptionColumns) -> DescriptionJson:
    """The same JSON as :func:`cdcgen.core.topology_json.description_to_json`."""
    hexes = columns.stream_hex()
    offsets = columns.offsets.tolist()
    return DescriptionJson(
        entries=[
            EntryJson(
                token_range_end=end,
                sharding_ignore_msb=ignore,
                streams=hexes[offsets[i] : offsets[i + 1]],
            )
            for i, (end, ignore) in enumerate(
                zip(columns.range_ends.tolist(), columns.ignore_msb.tolist(), strict=True)
            )
        ]
    )


def read_description_file(path: Path | str) -> DescriptionColumns:
    """Load a description JSON file into columns (``InvalidDescription`` names the problem)."""
    try:
        with open(path, encoding="utf-8") as handle:
            obj = load_json(handle, "the file")
    except UnreadableJson as exc:
        raise InvalidDescription(str(exc)) from None
    return columns_from_json(obj)


def description_bytes(columns: DescriptionColumns) -> bytes:
    """The description as compact JSON, the exact bytes its digest is taken of.

    The same bytes as ``json.dumps(columns_to_json(columns), separators=(",", ":"))``
    (tested), built from one hex matrix (:func:`hex_matrix`, one C pass) copied once
    into rows of ``"<hex>",``: far quicker than the encoder, which takes a large
    generation's millions of strings one by one.
    """
    if not columns.all_stream_ids_16_bytes():
        return json.dumps(columns_to_json(columns), separators=(",", ":")).encode("utf-8")
    quoted = np.empty((columns.stream_count, _QUOTED_WIDTH), dtype=np.uint8)
    quoted[:, 0] = quoted[:, -2] = ord('"')
    quoted[:, 1:-2] = hex_matrix(columns.id_matrix()[0])
    quoted[:, -1] = ord(",")
    streams = quoted.reshape(-1).data  # the join below is the one copy
    bounds = (columns.offsets * _QUOTED_WIDTH).tolist()
    parts: list[bytes | memoryview] = [_HEAD]
    for i, (end, ignore) in enumerate(
        zip(columns.range_ends.tolist(), columns.ignore_msb.tolist(), strict=True)
    ):
        start, stop = bounds[i], bounds[i + 1]
        head = _ENTRY_HEAD % (end, ignore)
        parts.append(b"," + head if i else head)
        parts.append(streams[start : stop - 1] if stop > start else b"")
        parts.append(_TAIL)
    parts.append(_TAIL)
    return b"".join(parts)
